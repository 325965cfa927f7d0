// Package validate decides which zone names, view names and zone clauses
// the agent passes to named's control channel.
//
// Everything the agent receives ends up inside an rndc command line that
// named parses as configuration (`addzone <zone> IN <view> { ... };`), and
// zone and view names also become file paths under the data directory. A
// value that could close its quoting, open a new statement, read or write a
// file outside the data directory, or load code (dlz/database) is refused
// here, before anything is written or sent. The checks are allow-lists: a
// character or keyword not known to be harmless is an error.
package validate

import (
	"errors"
	"fmt"
	"strings"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// MaxViewNameLength bounds a view name, a Kubernetes-style name that
// becomes a directory name. DNS names are bounded by v1alpha1's limits.
const MaxViewNameLength = 63

// Error is a refusal with a sentence the caller can act on. Field names the
// offending input ("zone", "view", "clause", "seed").
type Error struct {
	Field  string
	Reason string
}

func (e *Error) Error() string { return e.Field + ": " + e.Reason }

func fail(field, format string, args ...any) error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// IsValidation reports whether err is (or wraps) a validation refusal.
func IsValidation(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// ZoneName checks a zone name and returns its canonical form
// (records.CanonicalZone: lowercase, without the trailing dot). The
// operator sends names in that form already; the agent checks them anyway,
// as input from the network. Labels are letters, digits, '-' and '_' (the
// underscore appears in service zones such as _msdcs); '/' (RFC 2317
// classless reverse zones) is refused because the name becomes a file name.
// The root zone is refused: the agent only manages zones below it.
func ZoneName(name string) (string, error) {
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return "", fail("zone", "name %q contains %q; only letters, digits, '-', '_' and '.' are allowed", clip(name), rune(c))
		}
	}
	n := records.CanonicalZone(name)
	if n == "" || n == "." {
		return "", fail("zone", "name is empty (the root zone is not managed through the agent)")
	}
	if len(n) > v1alpha1.MaxDomainNameLength {
		return "", fail("zone", "name is %d characters long, the limit is %d", len(n), v1alpha1.MaxDomainNameLength)
	}
	for label := range strings.SplitSeq(n, ".") {
		if label == "" {
			return "", fail("zone", "name %q has an empty label", clip(name))
		}
		if len(label) > v1alpha1.MaxLabelLength {
			return "", fail("zone", "name has a label longer than %d characters", v1alpha1.MaxLabelLength)
		}
	}
	return n, nil
}

// ViewName checks a view name. "" is the default view (no views
// configured). Otherwise it is a Kubernetes-style name: lowercase letters,
// digits, '-' and '.', starting and ending alphanumeric, no "..": it becomes
// a directory name under the data directory.
func ViewName(view string) error {
	if view == "" {
		return nil
	}
	return objectName("view", view, MaxViewNameLength)
}

// objectName checks a Kubernetes-style object name of at most max
// characters: lowercase letters, digits, '-' and '.', starting and ending
// alphanumeric, no "..".
func objectName(field, name string, max int) error {
	if len(name) > max {
		return fail(field, "name is %d characters long, the limit is %d", len(name), max)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(isLowerAlnum(c) || c == '-' || c == '.') {
			return fail(field, "name %q contains %q; only lowercase letters, digits, '-' and '.' are allowed", clip(name), rune(c))
		}
	}
	if !isLowerAlnum(name[0]) || !isLowerAlnum(name[len(name)-1]) {
		return fail(field, "name %q must start and end with a letter or digit", clip(name))
	}
	if strings.Contains(name, "..") {
		return fail(field, "name %q contains \"..\"", clip(name))
	}
	return nil
}

func isAlnum(c byte) bool { return isLowerAlnum(c) || (c >= 'A' && c <= 'Z') }
func isLowerAlnum(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}

// clip bounds how much of a hostile input is echoed back in an error.
func clip(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
