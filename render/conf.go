package render

import (
	"fmt"
	"strings"
)

// conf writes named.conf text with consistent indentation. The first error
// (a name that cannot be quoted safely) sticks and is returned by String, so
// writers stay linear instead of checking an error per line.
type conf struct {
	b     strings.Builder
	depth int
	err   error
}

func newConf() *conf { return &conf{} }

func (c *conf) line(format string, args ...any) {
	for range c.depth {
		c.b.WriteByte('\t')
	}
	if len(args) == 0 {
		c.b.WriteString(format)
	} else {
		fmt.Fprintf(&c.b, format, args...)
	}
	c.b.WriteByte('\n')
}

// open writes a line ending in "{" and indents what follows.
func (c *conf) open(format string, args ...any) {
	c.line(format, args...)
	c.depth++
}

func (c *conf) close() {
	c.depth--
	c.line("};")
}

func (c *conf) blank() { c.b.WriteByte('\n') }

func (c *conf) comment(s string) { c.line("# %s", s) }

// list writes `name { e1; e2; };` on one line, the form BIND prints for
// short address lists.
func (c *conf) list(name string, elems []string) {
	c.line("%s { %s; };", name, strings.Join(elems, "; "))
}

// q quotes a name, recording the first failure.
func (c *conf) q(what, s string) string {
	out, err := quote(what, s)
	if err != nil && c.err == nil {
		c.err = err
	}
	return out
}

func (c *conf) fail(err error) {
	if err != nil && c.err == nil {
		c.err = err
	}
}

func (c *conf) String() (string, error) {
	if c.err != nil {
		return "", c.err
	}
	return c.b.String(), nil
}
