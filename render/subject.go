package render

// A large config holds tens of thousands of zones, keys and match-list
// elements, and nearly every check of them passes. Putting each subject
// into words ("BindZone x spec.allowQuery[3]") cost about a fifth of the
// render, for messages no one read. So every check takes its subject as a
// string (what) that it reads only to word an error, and runs first with
// none: only a check that fails runs again, named, for the message.
// Suffixes appended to an empty subject (what + " spec.allowQuery") cost
// nothing, as Go returns the one non-empty operand of a concatenation.

// namedOnError runs check without a subject and, only if it fails, again
// with subject() to word the error. It is small enough to be inlined
// (go build -gcflags=-m says so at every call), so the closures its
// callers pass stay on their stacks.
func namedOnError[T any](subject func() string, check func(what string) (T, error)) (T, error) {
	v, err := check("")
	if err != nil {
		_, err = check(subject())
	}
	return v, err
}

// checkNamedOnError is namedOnError for a check that returns only an
// error.
func checkNamedOnError(subject func() string, check func(what string) error) error {
	if err := check(""); err != nil {
		return check(subject())
	}
	return nil
}
