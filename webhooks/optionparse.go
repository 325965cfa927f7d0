package webhooks

import (
	"fmt"
	"net/netip"
	"strings"
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

type tokKind int

const (
	tokWord tokKind = iota
	tokString
	tokOpen
	tokClose
	tokSemi
	tokBang
)

type token struct {
	kind tokKind
	text string
}

// ParseStatement parses exactly one BIND option statement: a keyword,
// optional arguments and brace blocks, ending in ";". It is deliberately
// stricter than BIND's own grammar: no comments, no escapes, no characters
// outside a small set, so that no text can close the options block or hide
// a second statement.
func ParseStatement(s string) (Statement, error) {
	toks, err := lexStatement(s)
	if err != nil {
		return Statement{}, err
	}
	if len(toks) == 0 {
		return Statement{}, fmt.Errorf("empty statement; write one option such as `notify-source 198.18.0.1;`")
	}
	if toks[0].kind != tokWord {
		return Statement{}, fmt.Errorf("a statement starts with an option name such as `minimal-responses yes;`")
	}
	name := strings.ToLower(toks[0].text)
	if !isOptionName(name) {
		return Statement{}, fmt.Errorf("%q is not an option name; option names hold letters, digits and hyphens", toks[0].text)
	}
	st := Statement{Name: name}
	depth := 0
	for i := 1; i < len(toks); i++ {
		t := toks[i]
		switch t.kind {
		case tokOpen:
			depth++
		case tokClose:
			depth--
			if depth < 0 {
				return Statement{}, fmt.Errorf("unbalanced braces: a `}` closes a block that was never opened; balance every `{` with `};`")
			}
			if i+1 >= len(toks) || toks[i+1].kind != tokSemi {
				return Statement{}, fmt.Errorf("every `}` must be followed by `;` as in `allow-notify { key \"k\"; };`")
			}
		case tokSemi:
			if depth == 0 && i != len(toks)-1 {
				return Statement{}, fmt.Errorf("more than one statement; put each option in its own extraOptions item")
			}
		case tokWord:
			lw := strings.ToLower(t.text)
			if lw == "include" {
				return Statement{}, fmt.Errorf("`include` is not allowed; the operator owns every file named.conf reads")
			}
			if lw == "key" && i+1 < len(toks) && (toks[i+1].kind == tokWord || toks[i+1].kind == tokString) {
				st.Keys = append(st.Keys, strings.ToLower(toks[i+1].text))
				i++
				continue
			}
			addAddress(&st, t.text)
		case tokString:
			addAddress(&st, t.text)
		}
	}
	if depth != 0 {
		return Statement{}, fmt.Errorf("unbalanced braces: %d block(s) left open; close every `{` with `};`", depth)
	}
	if toks[len(toks)-1].kind != tokSemi {
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

// isWordByte is the set of characters allowed outside quotes: enough for
// names, numbers, addresses, prefixes, ports and durations, nothing that
// BIND's lexer treats specially.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '*' || c == '+' || c == '=' || c == '@' || c == '%'
}

func lexStatement(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			return nil, fmt.Errorf("comments (`#`) are not allowed in option statements; remove them")
		case c == '/' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '*'):
			return nil, fmt.Errorf("comments (`//`, `/*`) are not allowed in option statements; remove them")
		case c == '{':
			toks = append(toks, token{kind: tokOpen})
			i++
		case c == '}':
			toks = append(toks, token{kind: tokClose})
			i++
		case c == ';':
			toks = append(toks, token{kind: tokSemi})
			i++
		case c == '!':
			toks = append(toks, token{kind: tokBang})
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					return nil, fmt.Errorf("backslashes are not allowed inside quoted strings; write the value without escapes")
				}
				if s[j] < 0x20 || s[j] >= 0x7f {
					return nil, fmt.Errorf("quoted strings may hold printable ASCII only; remove the control or non-ASCII character")
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated quoted string; close it with `\"`")
			}
			toks = append(toks, token{kind: tokString, text: s[i+1 : j]})
			i = j + 1
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				if s[j] == '/' && j+1 < len(s) && (s[j+1] == '/' || s[j+1] == '*') {
					return nil, fmt.Errorf("comments (`//`, `/*`) are not allowed in option statements; remove them")
				}
				j++
			}
			toks = append(toks, token{kind: tokWord, text: s[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("character %q is not allowed outside quotes; option statements hold names, numbers, addresses, `{`, `}`, `;` and quoted strings", rune(c))
		}
	}
	return toks, nil
}
