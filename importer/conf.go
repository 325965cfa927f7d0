package importer

import (
	"fmt"
	"os"
	"path"
	"path/filepath"

	"git.unkin.net/unkin/bind-operator/internal/namedconf"
)

// Pos, Word and Statement are named.conf's, as internal/namedconf reads it.
type (
	Pos       = namedconf.Pos
	Word      = namedconf.Term
	Statement = namedconf.Statement
)

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
	stmts, err := namedconf.Parse(name, string(b))
	if err != nil {
		return nil, err
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
