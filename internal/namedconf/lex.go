// Package namedconf lexes the named.conf text that crosses a trust
// boundary: option statements users write into a BindCluster
// (webhooks.ParseStatement) and the zone clauses the agent passes to
// named's control channel (agent/validate.ParseClause).
//
// The lexer is deliberately stricter than named's own: no comments, no
// escapes, no control or non-ASCII characters, quoted strings on one line,
// and outside quotes only the characters of names, numbers, addresses,
// prefixes, ports and durations. So nothing it accepts can close a string
// or a block early or hide text from the parser that reads its tokens.
//
// Parse (parse.go) is the other reader: named's whole syntax, for files
// the operator reads but never renders.
package namedconf

import "fmt"

// Kind is what a token is.
type Kind int

const (
	// Word is an unquoted name, number, address, prefix or duration.
	Word Kind = iota
	// String is a quoted string; Text holds it without the quotes.
	String
	// Open, Close and Semi are "{", "}" and ";".
	Open
	Close
	Semi
	// Bang is "!", which negates the element after it.
	Bang
)

// Token is one lexical element.
type Token struct {
	Kind Kind
	// Text is the word, the string without its quotes, or the punctuation.
	Text string
	// Pos is the byte offset of the token in the input.
	Pos int
}

// Error is a refusal: what is wrong and what to do, and the byte offset
// where it was found.
type Error struct {
	Pos    int
	Reason string
}

func (e *Error) Error() string { return e.Reason }

func fail(pos int, format string, args ...any) error {
	return &Error{Pos: pos, Reason: fmt.Sprintf(format, args...)}
}

// Lex splits s into tokens, or says why it refuses s.
func Lex(s string) ([]Token, error) {
	var toks []Token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			return nil, fail(i, "comments (`#`) are not allowed; remove them")
		case isCommentStart(s, i):
			return nil, fail(i, "comments (`//`, `/*`) are not allowed; remove them")
		case c == '{' || c == '}' || c == ';' || c == '!':
			toks = append(toks, Token{Kind: punctuation[c], Text: string(c), Pos: i})
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					return nil, fail(j, "backslashes are not allowed inside quoted strings; write the value without escapes")
				}
				if s[j] < 0x20 || s[j] >= 0x7f {
					return nil, fail(j, "quoted strings may hold printable ASCII only; remove the control or non-ASCII character")
				}
				j++
			}
			if j >= len(s) {
				return nil, fail(i, "unterminated quoted string; close it with `\"`")
			}
			toks = append(toks, Token{Kind: String, Text: s[i+1 : j], Pos: i})
			i = j + 1
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				if isCommentStart(s, j) {
					return nil, fail(j, "comments (`//`, `/*`) are not allowed; remove them")
				}
				j++
			}
			toks = append(toks, Token{Kind: Word, Text: s[i:j], Pos: i})
			i = j
		default:
			return nil, fail(i, "character %q is not allowed outside quotes; write names, numbers, addresses, `{`, `}`, `;`, `!` and quoted strings", rune(c))
		}
	}
	return toks, nil
}

var punctuation = map[byte]Kind{'{': Open, '}': Close, ';': Semi, '!': Bang}

func isCommentStart(s string, i int) bool {
	return s[i] == '/' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '*')
}

// isWordByte is the set of characters allowed outside quotes: enough for
// names, numbers, addresses, prefixes, ports and durations, nothing that
// named's lexer treats specially.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '*' || c == '+' || c == '=' || c == '@' || c == '%'
}
