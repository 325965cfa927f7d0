package namedconf

import (
	"strings"
	"testing"
)

// FuzzParse: any text is parsed or refused, never a panic, and
// bounded by its length.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"options { directory \"/x\"; };",
		"acl a { !10/8; { 1.2.3.4; }; key k; };",
		"controls { inet * allow { any; } keys { k; }; };",
		"/* */ # \n // \n \"\\\"\" { } ; !",
		"zone \"x\" { type primary; file \"f\"; }; }",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks, err := lex("f", s)
		if err != nil {
			return
		}
		if len(toks) > len(s) {
			t.Fatalf("%d tokens from %d bytes", len(toks), len(s))
		}
		st, _, err := parseBlock("f", toks, 0)
		if err == nil {
			for _, x := range st {
				_ = x.Text()
			}
		}
		if strings.Count(s, "{") == 0 && err == nil {
			for _, x := range st {
				if x.HasBlock {
					t.Fatalf("a block from text without {: %q", s)
				}
			}
		}
	})
}

func TestParse(t *testing.T) {
	st, err := Parse("f", "# c\nkey \"k\" { algorithm hmac-sha256; secret \"c2VjcmV0\"; };\ncontrols { inet * allow { any; } keys { k; }; };\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 || st[0].Keyword() != "key" || st[0].Arg(0) != "k" || st[0].Find("secret").Arg(0) != "c2VjcmV0" || st[0].Pos != (Pos{File: "f", Line: 2}) {
		t.Fatalf("key: %+v", st[0])
	}
	if inet := st[1].Block[0]; len(inet.Tail) != 1 || inet.Tail[0].Keyword() != "keys" || inet.Text() != "inet * allow { any; } keys { k; };" {
		t.Fatalf("controls: %q", inet.Text())
	}
	// Errors name the keyword and the line, never the text.
	for _, bad := range []string{"key k { secret \"c2VjcmV0\" };", "key k { secret \"c2VjcmV0", "secret \"c2VjcmV0\"", "{{{"} {
		_, err := Parse("f", bad)
		if err == nil {
			t.Errorf("accepted %q", bad)
		} else if strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("%q: the error quotes the text: %v", bad, err)
		}
	}
}
