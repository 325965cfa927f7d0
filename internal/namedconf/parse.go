package namedconf

import (
	"fmt"
	"strings"
)

// This file reads named.conf as named does — the three comment styles,
// quoted strings with escapes, blocks, statements with several blocks —
// into statements, for files the operator reads but never renders: an
// existing server's configuration (the importer) and the control key the
// agent is given. Lex, above, is the strict lexer for text that crosses a
// trust boundary into a rendered config; this one is as permissive as
// named. Its errors give the file, the line and a statement's keyword,
// never a statement's text, which may be key material.

// Pos is where a statement or record starts: a file as named.conf names
// it (inside the root) and a 1-based line (0: unknown).
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File // a file as a whole (a zone file that names no SOA)
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Term is one word or quoted string of a statement.
type Term struct {
	Text   string
	Quoted bool
}

// Statement is one named.conf statement: its words up to a block or the
// semicolon, and the statements of its block. The elements of a list
// ("{ 10.0.0.1; key k; };") are statements too.
type Statement struct {
	Words    []Term
	Block    []*Statement
	HasBlock bool
	// Tail holds what follows the block before the semicolon, as
	// statements of their own: "inet * allow { any; } keys { k; };" has
	// the tail "keys { k; }".
	Tail []*Statement
	Pos  Pos
}

// Keyword is the statement's first word, lowercased ("" for a nested list
// with no words before its block).
func (s *Statement) Keyword() string {
	if len(s.Words) == 0 {
		return ""
	}
	return strings.ToLower(s.Words[0].Text)
}

// Arg is the i-th word after the keyword ("" when there is none).
func (s *Statement) Arg(i int) string {
	if i+1 >= len(s.Words) {
		return ""
	}
	return s.Words[i+1].Text
}

// Find returns the first statement of the block with this keyword.
func (s *Statement) Find(keyword string) *Statement {
	for _, c := range s.Block {
		if c.Keyword() == keyword {
			return c
		}
	}
	return nil
}

// Text is the statement as one line of named.conf (for reports and
// extraOptions).
func (s *Statement) Text() string {
	var b strings.Builder
	writeStatement(&b, s)
	return b.String()
}

func writeStatement(b *strings.Builder, s *Statement) {
	writeBody(b, s)
	b.WriteByte(';')
}

// writeBody writes the statement without its semicolon.
func writeBody(b *strings.Builder, s *Statement) {
	for i, w := range s.Words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w.Quoted {
			b.WriteString(quote(w.Text))
		} else {
			b.WriteString(w.Text)
		}
	}
	if s.HasBlock {
		if len(s.Words) > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("{ ")
		for _, c := range s.Block {
			writeStatement(b, c)
			b.WriteByte(' ')
		}
		b.WriteByte('}')
	}
	for _, t := range s.Tail {
		b.WriteByte(' ')
		writeBody(b, t)
	}
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Parse reads the statements of one file's text (file names it in
// errors). An include statement is returned as it is: following it is the
// reader's business.
func Parse(file, text string) ([]*Statement, error) {
	toks, err := lex(file, text)
	if err != nil {
		return nil, err
	}
	st, _, err := parseBlock(file, toks, 0)
	return st, err
}

// what names a statement in an error: its keyword, never its text.
func (s *Statement) what() string {
	if kw := s.Keyword(); kw != "" {
		return fmt.Sprintf("the %q statement", kw)
	}
	return "a statement"
}

type confToken struct {
	text   string
	quoted bool
	line   int
}

// lex splits named.conf text into words, quoted strings and the
// punctuation { } ; ! (each a token of its own), dropping the three kinds
// of comments named accepts.
func lex(file, s string) ([]confToken, error) {
	var toks []confToken
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || (c == '/' && i+1 < len(s) && s[i+1] == '/'):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: a /* comment is not closed", file, line)
			}
			line += strings.Count(s[i:i+2+end], "\n")
			i += end + 4
		case c == '"':
			var b strings.Builder
			start := line
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
				if s[j] == '\n' {
					line++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("%s:%d: a quoted string is not closed", file, start)
			}
			toks = append(toks, confToken{b.String(), true, start})
			i = j + 1
		case c == '{' || c == '}' || c == ';' || c == '!':
			toks = append(toks, confToken{string(c), false, line})
			i++
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r\n\f\v{};!\"#", rune(s[j])) && !(s[j] == '/' && j+1 < len(s) && (s[j+1] == '/' || s[j+1] == '*')) {
				j++
			}
			toks = append(toks, confToken{s[i:j], false, line})
			i = j
		}
	}
	return toks, nil
}

// maxNesting bounds how deep blocks nest (named.conf needs 4).
const maxNesting = 32

// parseBlock parses statements until the end of toks, or until the "}"
// that closes the block when nested (depth > 0; it consumes the "}").
func parseBlock(file string, toks []confToken, depth int) ([]*Statement, []confToken, error) {
	if depth > maxNesting {
		line := 0
		if len(toks) > 0 {
			line = toks[0].line
		}
		return nil, nil, fmt.Errorf("%s:%d: blocks nest deeper than %d", file, line, maxNesting)
	}
	nested := depth > 0
	var out []*Statement
	for len(toks) > 0 {
		t := toks[0]
		if !t.quoted && t.text == "}" {
			if !nested {
				return nil, nil, fmt.Errorf("%s:%d: a } closes no block", file, t.line)
			}
			return out, toks[1:], nil
		}
		if !t.quoted && t.text == ";" {
			toks = toks[1:] // an empty statement
			continue
		}
		st := &Statement{Pos: Pos{File: file, Line: t.line}}
		for len(toks) > 0 {
			t = toks[0]
			if t.quoted || (t.text != ";" && t.text != "{" && t.text != "}") {
				st.Words = append(st.Words, Term{t.text, t.quoted})
				toks = toks[1:]
				continue
			}
			break
		}
		if len(toks) == 0 {
			return nil, nil, fmt.Errorf("%s:%d: %s has no ;", file, st.Pos.Line, st.what())
		}
		if toks[0].text == "{" {
			block, rest, err := parseBlock(file, toks[1:], depth+1)
			if err != nil {
				return nil, nil, err
			}
			st.Block, st.HasBlock, toks = block, true, rest
			// Words and blocks after the block, up to the semicolon.
			for len(toks) > 0 && (toks[0].quoted || toks[0].text != ";") {
				tail := &Statement{Pos: Pos{File: file, Line: toks[0].line}}
				for len(toks) > 0 && (toks[0].quoted || (toks[0].text != ";" && toks[0].text != "{" && toks[0].text != "}")) {
					tail.Words = append(tail.Words, Term{toks[0].text, toks[0].quoted})
					toks = toks[1:]
				}
				if len(toks) == 0 || toks[0].quoted || toks[0].text != "{" {
					if len(tail.Words) > 0 {
						st.Tail = append(st.Tail, tail)
					}
					break
				}
				b, rest, err := parseBlock(file, toks[1:], depth+1)
				if err != nil {
					return nil, nil, err
				}
				tail.Block, tail.HasBlock, toks = b, true, rest
				st.Tail = append(st.Tail, tail)
			}
		}
		if len(toks) == 0 || toks[0].text != ";" || toks[0].quoted {
			return nil, nil, fmt.Errorf("%s:%d: %s has no ;", file, st.Pos.Line, st.what())
		}
		toks = toks[1:]
		out = append(out, st)
	}
	if nested {
		return nil, nil, fmt.Errorf("%s: a { is not closed by the end of the file", file)
	}
	return out, nil, nil
}
