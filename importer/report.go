package importer

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// Outcome is how an import ended, and the command's exit status.
type Outcome int

const (
	// Whole: everything was imported or replaced by what the operator
	// does itself.
	Whole Outcome = 0
	// Failed: nothing was written (the configuration could not be read,
	// or an emitted object failed validation).
	Failed Outcome = 1
	// WithOmissions: the objects were written, and the report lists what
	// they leave out.
	WithOmissions Outcome = 3
)

// Finding is one statement or record that was not imported as written.
type Finding struct {
	Pos  Pos
	What string // the statement or record
	Why  string // what happened to it, and what to do
	// Replaced: the operator does this itself (listen-on, controls,
	// logging, the zone's file…); not a loss.
	Replaced bool
}

func (f Finding) String() string {
	kind := "omitted"
	if f.Replaced {
		kind = "replaced"
	}
	return fmt.Sprintf("%s: %s: %s: %s", f.Pos, kind, f.What, f.Why)
}

// Report is every finding of an import.
type Report struct {
	Findings []Finding
}

func (r *Report) omit(pos Pos, what, why string, args ...any) {
	r.Findings = append(r.Findings, Finding{Pos: pos, What: what, Why: fmt.Sprintf(why, args...)})
}

func (r *Report) replace(pos Pos, what, why string, args ...any) {
	r.Findings = append(r.Findings, Finding{Pos: pos, What: what, Why: fmt.Sprintf(why, args...), Replaced: true})
}

// Omitted is the number of findings that are losses.
func (r *Report) Omitted() int {
	n := 0
	for _, f := range r.Findings {
		if !f.Replaced {
			n++
		}
	}
	return n
}

// Outcome is Whole without omissions, WithOmissions otherwise.
func (r *Report) Outcome() Outcome {
	if r.Omitted() > 0 {
		return WithOmissions
	}
	return Whole
}

// Write prints every finding, one per line, then a summary by reason.
func (r *Report) Write(w io.Writer) {
	findings := slices.Clone(r.Findings)
	slices.SortStableFunc(findings, func(a, b Finding) int {
		return cmp.Or(strings.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line))
	})
	for _, f := range findings {
		_, _ = fmt.Fprintln(w, f)
	}
	why := map[string]int{}
	for _, f := range r.Findings {
		if !f.Replaced {
			why[f.Why]++
		}
	}
	keys := make([]string, 0, len(why))
	for k := range why {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return why[keys[i]] > why[keys[j]] || (why[keys[i]] == why[keys[j]] && keys[i] < keys[j])
	})
	_, _ = fmt.Fprintf(w, "%d omitted, %d replaced by the operator\n", r.Omitted(), len(r.Findings)-r.Omitted())
	for _, k := range keys {
		_, _ = fmt.Fprintf(w, "  %6d  %s\n", why[k], k)
	}
}
