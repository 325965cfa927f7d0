package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// docs/troubleshooting.md has one entry, a "### <Reason>" heading in its
// "Conditions and events" section, per condition reason of this file's
// conditions.go and per reason of an event the controllers record: users
// type the reason they see into the page's search. These tests fail when a
// reason or an event is added without an entry, when an entry outlives its
// reason, and when a link of the guide points at no heading.

const (
	guidePath      = "../../docs/troubleshooting.md"
	behavioursPath = "../../docs/behaviours.md"
	guideSection   = "## Conditions and events"
)

// eventSources are the directories whose Go files record events.
var eventSources = []string{"../../controllers", "../../webhooks", "../../cmd", "../../agent", "../../internal"}

// dynamicEventReasons are the reasons of the Eventf calls whose reason is
// not a string literal or a Reason constant, by "file: expression": what
// the expression can hold, read where it is set. A new such call fails
// TestEveryEventHasAnEntry until it is listed here.
var dynamicEventReasons = map[string][]string{
	// ensureOnPods: "Zone"+titleCase(res.Action) for the agent's
	// ActionAdded and ActionModified only.
	`bindzone_pods.go: "Zone" + titleCase(res.Action)`: {"ZoneAdded", "ZoneModified"},
	// BindTSIGKey Reconcile: the reason of a Ready condition that is not
	// True (reconcileSecret's notReady calls).
	`bindtsigkey_controller.go: cond.Reason`: {"SecretNotFound", "SecretNotManaged", "SecretUnusable"},
	// setConflict's reason (its two callers in apply).
	`dnsrecord_controller.go: reason`: {"ClaimedByAnother", "ForeignData"},
}

// reasonConstants parses conditions.go: every Reason* constant and its value.
func reasonConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "conditions.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Reason") {
					continue
				}
				if i >= len(vs.Values) {
					t.Fatalf("conditions.go: %s has no value of its own", n.Name)
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("conditions.go: %s is not a string literal", n.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[n.Name] = v
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("conditions.go: no Reason constant found")
	}
	return out
}

// eventReasons parses every non-test Go file of eventSources and returns
// the reasons of their Eventf and Event calls (the fourth argument of the
// events.EventRecorder methods), each with where it is recorded.
func eventReasons(t *testing.T, constants map[string]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, dir := range eventSources {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Eventf" && sel.Sel.Name != "Event") {
					return true
				}
				where := fset.Position(call.Pos()).String()
				if len(call.Args) < 4 {
					t.Errorf("%s: an %s call with %d arguments: not the events.EventRecorder this test reads", where, sel.Sel.Name, len(call.Args))
					return true
				}
				for _, r := range reasonsOf(t, filepath.Base(path), call.Args[3], constants, where) {
					out[r] = append(out[r], where)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(out) == 0 {
		t.Fatal("no event found in " + strings.Join(eventSources, ", "))
	}
	return out
}

// reasonsOf resolves the reason argument of one event call.
func reasonsOf(t *testing.T, file string, e ast.Expr, constants map[string]string, where string) []string {
	t.Helper()
	switch x := e.(type) {
	case *ast.BasicLit:
		if v, err := strconv.Unquote(x.Value); err == nil {
			return []string{v}
		}
	case *ast.SelectorExpr:
		if v, ok := constants[x.Sel.Name]; ok {
			return []string{v}
		}
	}
	key := file + ": " + types.ExprString(e)
	if rs, ok := dynamicEventReasons[key]; ok {
		return rs
	}
	t.Errorf("%s: the event reason %s is neither a string literal nor a Reason constant of conditions.go; add %q to dynamicEventReasons with the reasons it can hold", where, types.ExprString(e), key)
	return nil
}

// guideSectionText is the "Conditions and events" section of the guide,
// up to the next "## " heading.
func guideSectionText(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n"+guideSection+"\n")
	if !ok {
		t.Fatalf("%s: no %q heading", guidePath, guideSection)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// headings are the "### " headings of text, in order.
func headings(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			out = append(out, strings.TrimSpace(h))
		}
	}
	return out
}

// slug is the anchor a Markdown renderer gives a heading: lowercase,
// punctuation dropped, spaces to hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// checkEntry fails unless the section has a "### reason" heading and its
// table of contents links to it.
func checkEntry(t *testing.T, section string, have map[string]bool, reason, what string) {
	t.Helper()
	if !have[reason] {
		t.Errorf("%s: %s %q has no \"### %s\" entry under %q", guidePath, what, reason, reason, guideSection)
		return
	}
	if !strings.Contains(section, "](#"+slug(reason)+")") {
		t.Errorf("%s: the table of contents of %q does not link to #%s", guidePath, guideSection, slug(reason))
	}
}

func TestEveryConditionReasonHasAnEntry(t *testing.T) {
	section := guideSectionText(t)
	have := map[string]bool{}
	for _, h := range headings(section) {
		have[h] = true
	}
	constants := reasonConstants(t)
	names := make([]string, 0, len(constants))
	for n := range constants {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		checkEntry(t, section, have, constants[n], "condition reason "+n+" =")
	}
}

func TestEveryEventHasAnEntry(t *testing.T) {
	section := guideSectionText(t)
	have := map[string]bool{}
	for _, h := range headings(section) {
		have[h] = true
	}
	events := eventReasons(t, reasonConstants(t))
	reasons := make([]string, 0, len(events))
	for r := range events {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	for _, r := range reasons {
		checkEntry(t, section, have, r, "the event reason (recorded at "+strings.Join(events[r], ", ")+")")
	}
}

// reasonLike is a heading that names a reason: one CamelCase word.
var reasonLike = regexp.MustCompile(`^[A-Z][A-Za-z]+$`)

func TestNoEntryWithoutItsReason(t *testing.T) {
	known := map[string]bool{}
	constants := reasonConstants(t)
	for _, v := range constants {
		known[v] = true
	}
	for r := range eventReasons(t, constants) {
		known[r] = true
	}
	seen := map[string]bool{}
	for _, h := range headings(guideSectionText(t)) {
		if seen[h] {
			t.Errorf("%s: two \"### %s\" entries", guidePath, h)
		}
		seen[h] = true
		if reasonLike.MatchString(h) && !known[h] {
			t.Errorf("%s: \"### %s\" is neither a condition reason of conditions.go nor an event reason the code records: remove the entry, or fix its name", guidePath, h)
		}
	}
}

// behavioursLink is a link to a heading of docs/behaviours.md.
var behavioursLink = regexp.MustCompile(`\]\(behaviours\.md#([^)]+)\)`)

func TestGuideLinksToBehavioursHeadings(t *testing.T) {
	data, err := os.ReadFile(behavioursPath)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[slug(strings.TrimSpace(h))] = true
		}
	}
	section := guideSectionText(t)
	links := behavioursLink.FindAllStringSubmatch(section, -1)
	if len(links) == 0 {
		t.Fatalf("%s: no link to behaviours.md in %q", guidePath, guideSection)
	}
	for _, m := range links {
		if !anchors[m[1]] {
			t.Errorf("%s: behaviours.md#%s is no \"## \" heading of %s", guidePath, m[1], behavioursPath)
		}
	}
}
