package namedconf

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestLex(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Token
	}{
		{"", nil},
		{`also-notify { 198.18.0.1 key "xfr"; ! 10.0.0.0/8; };`, []Token{
			{Word, "also-notify", 0}, {Open, "{", 12}, {Word, "198.18.0.1", 14}, {Word, "key", 25}, {String, "xfr", 29},
			{Semi, ";", 34}, {Bang, "!", 36}, {Word, "10.0.0.0/8", 38}, {Semi, ";", 48}, {Close, "}", 50}, {Semi, ";", 51},
		}},
		{"max-cache-size 256m;\n\tfe80::1%eth0 a+b=c@d", []Token{
			{Word, "max-cache-size", 0}, {Word, "256m", 15}, {Semi, ";", 19}, {Word, "fe80::1%eth0", 22}, {Word, "a+b=c@d", 35},
		}},
		{`!192.0.2.1 "" "/var/lib/bind/a.db"`, []Token{{Bang, "!", 0}, {Word, "192.0.2.1", 1}, {String, "", 11}, {String, "/var/lib/bind/a.db", 14}}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Lex(tc.in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestLexRefuses(t *testing.T) {
	const comment, slashes = "comments (`#`) are not allowed; remove them", "comments (`//`, `/*`) are not allowed; remove them"
	for _, tc := range []struct {
		in   string
		want *Error
	}{
		{"a; # c", &Error{3, comment}},
		{"a; // c", &Error{3, slashes}},
		{"a /* c */;", &Error{2, slashes}},
		{"10.0.0.0//8;", &Error{8, slashes}},
		{`a "b\"c";`, &Error{4, "backslashes are not allowed inside quoted strings; write the value without escapes"}},
		{"a \"b\nc\";", &Error{4, "quoted strings may hold printable ASCII only; remove the control or non-ASCII character"}},
		{`a "é";`, &Error{3, "quoted strings may hold printable ASCII only; remove the control or non-ASCII character"}},
		{`a "b;`, &Error{2, "unterminated quoted string; close it with `\"`"}},
		{"a\x00;", &Error{1, "character '\\x00' is not allowed outside quotes; write names, numbers, addresses, `{`, `}`, `;`, `!` and quoted strings"}},
		{"a 'b';", &Error{2, "character '\\'' is not allowed outside quotes; write names, numbers, addresses, `{`, `}`, `;`, `!` and quoted strings"}},
		{`a \b;`, &Error{2, "character '\\\\' is not allowed outside quotes; write names, numbers, addresses, `{`, `}`, `;`, `!` and quoted strings"}},
		{"a $(b);", &Error{2, "character '$' is not allowed outside quotes; write names, numbers, addresses, `{`, `}`, `;`, `!` and quoted strings"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Lex(tc.in)
			g.Expect(got).To(BeNil())
			g.Expect(err).To(Equal(tc.want))
		})
	}
}

// FuzzLex: no input panics the lexer, and what it accepts holds no escape
// or NUL anywhere, balanced quotes, and no comment outside them, so the
// text cannot close a string or block that the parser did not see close.
//
//	go test -fuzz FuzzLex -fuzztime 30s ./internal/namedconf/
func FuzzLex(f *testing.F) {
	for _, s := range []string{`a { b "c"; ! d; };`, `}; zone "x" {`, `"`, `# x`, `/* */`, `x "a\"b";`, "x\n{\n};", `key "http://x#y";`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks, err := Lex(s)
		if err != nil {
			return
		}
		if strings.ContainsAny(s, "\\\x00") || strings.Count(s, `"`)%2 != 0 {
			t.Fatalf("accepted %q", s)
		}
		for _, tk := range toks {
			if tk.Kind == Word && (tk.Text == "" || strings.Contains(tk.Text, "//") || strings.Contains(tk.Text, "/*") || strings.Contains(tk.Text, "#")) {
				t.Fatalf("accepted %q with the word %q", s, tk.Text)
			}
		}
	})
}
