package webhooks

import (
	"fmt"
	"net/netip"
	"strings"

	"git.unkin.net/unkin/bind-operator/internal/namedconf"
)

// Statement is the structured form of one option statement from free text
// that reaches named.conf (BindCluster.spec.extraOptions). The CEL policy
// rules judge this form, not the raw text.
type Statement struct {
	// Name is the statement's keyword, lowercased, e.g. "also-notify".
	Name string
	// Addresses are the IP literals anywhere in the statement, in
	// canonical form (IPv4-mapped IPv6 unmapped, zones dropped).
	Addresses []string
	// Prefixes are the CIDR prefixes anywhere in the statement.
	Prefixes []string
	// Keys are the TSIG key names the statement names with `key "K"`.
	Keys []string
}

// ParseStatement parses exactly one BIND option statement: a keyword,
// optional arguments and brace blocks, ending in ";". Its lexer
// (internal/namedconf) is deliberately stricter than BIND's own grammar:
// no comments, no escapes, no characters outside a small set, so that no
// text can close the options block or hide a second statement.
func ParseStatement(s string) (Statement, error) {
	toks, err := namedconf.Lex(s)
	if err != nil {
		return Statement{}, err
	}
	if len(toks) == 0 {
		return Statement{}, fmt.Errorf("empty statement; write one option such as `notify-source 198.18.0.1;`")
	}
	if toks[0].Kind != namedconf.Word {
		return Statement{}, fmt.Errorf("a statement starts with an option name such as `minimal-responses yes;`")
	}
	name := strings.ToLower(toks[0].Text)
	if !isOptionName(name) {
		return Statement{}, fmt.Errorf("%q is not an option name; option names hold letters, digits and hyphens", toks[0].Text)
	}
	st := Statement{Name: name}
	depth := 0
	for i := 1; i < len(toks); i++ {
		t := toks[i]
		switch t.Kind {
		case namedconf.Open:
			depth++
		case namedconf.Close:
			depth--
			if depth < 0 {
				return Statement{}, fmt.Errorf("unbalanced braces: a `}` closes a block that was never opened; balance every `{` with `};`")
			}
			if i+1 >= len(toks) || toks[i+1].Kind != namedconf.Semi {
				return Statement{}, fmt.Errorf("every `}` must be followed by `;` as in `allow-notify { key \"k\"; };`")
			}
		case namedconf.Semi:
			if depth == 0 && i != len(toks)-1 {
				return Statement{}, fmt.Errorf("more than one statement; put each option in its own extraOptions item")
			}
		case namedconf.Word:
			lw := strings.ToLower(t.Text)
			if lw == "include" {
				return Statement{}, fmt.Errorf("`include` is not allowed; the operator owns every file named.conf reads")
			}
			if lw == "key" && i+1 < len(toks) && (toks[i+1].Kind == namedconf.Word || toks[i+1].Kind == namedconf.String) {
				st.Keys = append(st.Keys, strings.ToLower(toks[i+1].Text))
				i++
				continue
			}
			addAddress(&st, t.Text)
		case namedconf.String:
			addAddress(&st, t.Text)
		}
	}
	if depth != 0 {
		return Statement{}, fmt.Errorf("unbalanced braces: %d block(s) left open; close every `{` with `};`", depth)
	}
	if toks[len(toks)-1].Kind != namedconf.Semi {
		return Statement{}, fmt.Errorf("a statement must end with `;`, e.g. `minimal-responses yes;`")
	}
	return st, nil
}

func addAddress(st *Statement, w string) {
	if a, err := netip.ParseAddr(w); err == nil {
		st.Addresses = append(st.Addresses, a.WithZone("").Unmap().String())
		return
	}
	if p, err := netip.ParsePrefix(w); err == nil {
		st.Prefixes = append(st.Prefixes, p.String())
	}
}

func isOptionName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return s[0] >= 'a' && s[0] <= 'z'
}
