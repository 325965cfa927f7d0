package importer

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
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

// FindingKind says what happened to what a finding names.
type FindingKind int

const (
	// Omitted: left out, a loss the report asks the user to look at.
	Omitted FindingKind = iota
	// Replaced: the operator does this itself (listen-on, controls,
	// logging, the zone's file…); not a loss.
	Replaced
	// Converted: written in this API's shape, meaning the same.
	Converted
)

func (k FindingKind) String() string {
	switch k {
	case Replaced:
		return "replaced"
	case Converted:
		return "converted"
	}
	return "omitted"
}

// Finding is one statement, record or field that was not imported as
// written.
type Finding struct {
	Pos  Pos
	What string // the statement, record or field
	Why  string // what happened to it, and what to do
	Kind FindingKind
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s: %s", f.Pos, f.Kind, f.What, f.Why)
}

// Report is every finding of an import.
type Report struct {
	Findings []Finding
}

func (r *Report) omit(pos Pos, what, why string, args ...any) {
	r.Findings = append(r.Findings, Finding{Pos: pos, What: what, Why: fmt.Sprintf(why, args...)})
}

func (r *Report) replace(pos Pos, what, why string, args ...any) {
	r.Findings = append(r.Findings, Finding{Pos: pos, What: what, Why: fmt.Sprintf(why, args...), Kind: Replaced})
}

func (r *Report) converted(pos Pos, what, why string, args ...any) {
	r.Findings = append(r.Findings, Finding{Pos: pos, What: what, Why: fmt.Sprintf(why, args...), Kind: Converted})
}

// count is the number of findings of kind k.
func (r *Report) count(k FindingKind) int {
	n := 0
	for _, f := range r.Findings {
		if f.Kind == k {
			n++
		}
	}
	return n
}

// Omitted is the number of findings that are losses.
func (r *Report) Omitted() int { return r.count(Omitted) }

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
		return cmp.Or(compareFiles(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line))
	})
	for _, f := range findings {
		_, _ = fmt.Fprintln(w, f)
	}
	why := map[string]int{}
	for _, f := range r.Findings {
		if f.Kind == Omitted {
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
	_, _ = fmt.Fprintf(w, "%d omitted, %d replaced by the operator", r.Omitted(), r.count(Replaced))
	if n := r.count(Converted); n > 0 {
		_, _ = fmt.Fprintf(w, ", %d converted", n)
	}
	_, _ = fmt.Fprintln(w)
	for _, k := range keys {
		_, _ = fmt.Fprintf(w, "  %6d  %s\n", why[k], k)
	}
}

// compareFiles orders positions by file, and a manifest's documents
// ("file#10") by number.
func compareFiles(a, b string) int {
	af, ad, aok := strings.Cut(a, "#")
	bf, bd, bok := strings.Cut(b, "#")
	if !aok || !bok || af != bf {
		return strings.Compare(a, b)
	}
	an, aerr := strconv.Atoi(ad)
	bn, berr := strconv.Atoi(bd)
	if aerr != nil || berr != nil {
		return strings.Compare(a, b)
	}
	return cmp.Compare(an, bn)
}
