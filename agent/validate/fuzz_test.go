package validate

import (
	"strings"
	"testing"

	"git.unkin.net/unkin/bind-operator/internal/namedconf"
)

// FuzzClause: no input panics the checkers, and whatever ParseClause
// accepts is one block that cannot escape its quoting when placed in an
// rndc command line.
//
//	go test -fuzz FuzzClause -fuzztime 30s ./agent/validate/
func FuzzClause(f *testing.F) {
	for _, s := range []string{
		`{ type primary; file "/d/a.db"; };`,
		`{ type secondary; primaries { 198.18.0.1 key "k"; }; };`,
		`{ type primary; }; include "/etc/passwd";`,
		`{ type primary; /* */ };`,
		`zone "a" { type primary; };`,
		"{ type primary; file \"/d/\\\"\"; };",
	} {
		f.Add(s, "example.com", "internal")
	}
	f.Fuzz(func(t *testing.T, clause, zone, view string) {
		_, _ = ZoneName(zone)
		_ = ViewName(view)
		_, _ = ParseShowzone(clause)
		c, err := ParseClause(clause, "/d")
		if err != nil {
			if !IsValidation(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, bad := range []string{"\\", "\x00", "\x7f"} {
			if strings.Contains(c.Text, bad) {
				t.Fatalf("accepted clause contains %q: %q", bad, c.Text)
			}
		}
		toks, _ := namedconf.Lex(c.Text)
		for _, tk := range toks {
			if tk.Kind == namedconf.Word && (forbiddenWords[strings.ToLower(tk.Text)] || strings.Contains(tk.Text, "//") || strings.Contains(tk.Text, "/*")) {
				t.Fatalf("accepted clause contains the word %q", tk.Text)
			}
		}
		if !c.Equal(c) {
			t.Fatal("clause not equal to itself")
		}
	})
}
