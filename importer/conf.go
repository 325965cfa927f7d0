package importer

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Pos is where a statement or record starts: a file as named.conf names
// it (inside the root) and a 1-based line (0: unknown).
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File // a record of a zone file: the parser does not say its line
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Word is one word or quoted string of a statement.
type Word struct {
	Text   string
	Quoted bool
}

// Statement is one named.conf statement: its words up to a block or the
// semicolon, and the statements of its block. The elements of a list
// ("{ 10.0.0.1; key k; };") are statements too.
type Statement struct {
	Words    []Word
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

// maxIncludeDepth bounds include chains (a file including itself is
// refused before that).
const maxIncludeDepth = 16

// maxConfBytes bounds one configuration file.
const maxConfBytes = 16 << 20

// ParseConfig reads the named.conf at file (a path as the server sees it,
// resolved inside root) and every file it includes, and returns its
// statements with include statements replaced by what they include.
func ParseConfig(root, file string) ([]*Statement, error) {
	p := &confParser{root: root, open: map[string]bool{}}
	return p.file(file, 0)
}

type confParser struct {
	root string
	open map[string]bool
}

// resolve maps a path as named sees it onto the importing machine: an
// absolute path lies under root; a relative one is relative to root (named
// resolves it against its working directory, which the import cannot
// know, so it is the root's).
func resolve(root, p string) string {
	return filepath.Join(root, filepath.FromSlash(path.Clean("/"+p)))
}

func (p *confParser) file(name string, depth int) ([]*Statement, error) {
	if depth > maxIncludeDepth {
		return nil, fmt.Errorf("%s: includes nest deeper than %d files", name, maxIncludeDepth)
	}
	if p.open[name] {
		return nil, fmt.Errorf("%s: includes itself", name)
	}
	p.open[name] = true
	defer delete(p.open, name)
	b, err := readBounded(resolve(p.root, name), maxConfBytes)
	if err != nil {
		return nil, err
	}
	toks, err := lexConf(name, string(b))
	if err != nil {
		return nil, err
	}
	stmts, rest, err := parseBlock(name, toks, 0)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%s:%d: unexpected %q", name, rest[0].line, rest[0].text)
	}
	return p.expand(stmts, depth)
}

// expand replaces include statements, at any depth, by the statements of
// the files they name.
func (p *confParser) expand(stmts []*Statement, depth int) ([]*Statement, error) {
	var out []*Statement
	for _, s := range stmts {
		if s.Keyword() == "include" && !s.HasBlock {
			if len(s.Words) != 2 {
				return nil, fmt.Errorf("%s: include takes one file name", s.Pos)
			}
			inc, err := p.file(s.Words[1].Text, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.Pos, err)
			}
			out = append(out, inc...)
			continue
		}
		if s.HasBlock {
			b, err := p.expand(s.Block, depth)
			if err != nil {
				return nil, err
			}
			s.Block = b
		}
		out = append(out, s)
	}
	return out, nil
}

func readBounded(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d this reads", name, st.Size(), limit)
	}
	return os.ReadFile(name)
}

type confToken struct {
	text   string
	quoted bool
	line   int
}

// lexConf splits named.conf text into words, quoted strings and the
// punctuation { } ; ! (each a token of its own), dropping the three kinds
// of comments named accepts.
func lexConf(file, s string) ([]confToken, error) {
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
				st.Words = append(st.Words, Word{t.text, t.quoted})
				toks = toks[1:]
				continue
			}
			break
		}
		if len(toks) == 0 {
			return nil, nil, fmt.Errorf("%s:%d: the statement %q has no ;", file, st.Pos.Line, st.Text())
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
					tail.Words = append(tail.Words, Word{toks[0].text, toks[0].quoted})
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
			return nil, nil, fmt.Errorf("%s:%d: the statement %q has no ;", file, st.Pos.Line, st.Text())
		}
		toks = toks[1:]
		out = append(out, st)
	}
	if nested {
		return nil, nil, fmt.Errorf("%s: a { is not closed by the end of the file", file)
	}
	return out, nil, nil
}
