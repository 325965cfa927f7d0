package render

import (
	"fmt"
	"strconv"
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
	} else if !c.printf(format, args) {
		fmt.Fprintf(&c.b, format, args...)
	}
	c.b.WriteByte('\n')
}

// printf writes format with args when it uses only the verbs named.conf
// lines need (%s and %q of strings, %d of integers, %%), as fmt would,
// without fmt's reflection: a 10,000-zone config is some 100,000 lines.
// It writes nothing and returns false for anything else.
func (c *conf) printf(format string, args []any) bool {
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		if i+1 >= len(format) {
			return false
		}
		i++
		switch format[i] {
		case '%':
			continue
		case 's', 'q':
			if n >= len(args) {
				return false
			}
			if _, ok := args[n].(string); !ok {
				return false
			}
		case 'd':
			if n >= len(args) {
				return false
			}
			switch args[n].(type) {
			case int, int32, int64:
			default:
				return false
			}
		default:
			return false
		}
		n++
	}
	if n != len(args) {
		return false
	}
	var buf [24]byte
	n = 0
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch != '%' {
			c.b.WriteByte(ch)
			continue
		}
		i++
		switch format[i] {
		case '%':
			c.b.WriteByte('%')
			continue
		case 's':
			c.b.WriteString(args[n].(string))
		case 'q':
			c.b.Write(strconv.AppendQuote(buf[:0], args[n].(string)))
		case 'd':
			var v int64
			switch a := args[n].(type) {
			case int:
				v = int64(a)
			case int32:
				v = int64(a)
			case int64:
				v = a
			}
			c.b.Write(strconv.AppendInt(buf[:0], v, 10))
		}
		n++
	}
	return true
}

// words writes a line made of parts, for the hottest lines: it neither
// parses a format nor boxes its arguments.
func (c *conf) words(parts ...string) {
	for range c.depth {
		c.b.WriteByte('\t')
	}
	for _, p := range parts {
		c.b.WriteString(p)
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
func (c *conf) list(name string, elems []string) { c.keyList(name, nil, elems) }

// q quotes a name, recording the first failure.
func (c *conf) q(what, s string) string {
	out, err := quote(what, s)
	if err != nil && c.err == nil {
		c.err = err
	}
	return out
}

// name checks a name its caller writes between quotes of its own, records
// the first failure as q does, and returns s: unlike q it builds no string
// (a 10,000-zone config has some 30,000 quoted names).
func (c *conf) name(what, s string) string {
	if !nameOK(s) {
		c.fail(safeName(what, s))
	}
	return s
}

// keyElement is the address-match element of the BIND key named k,
// checked as name checks it.
func (c *conf) keyElement(k string) string {
	return `key "` + c.name("key name", k) + `"`
}

// keyList is list of the elements of keys (as keyElement makes them),
// then those of rest. The key elements go straight into the text: every
// view lists its keys in both named.conf variants, thousands of them in a
// large config.
func (c *conf) keyList(name string, keys []string, rest ...[]string) {
	for range c.depth {
		c.b.WriteByte('\t')
	}
	c.b.WriteString(name)
	c.b.WriteString(" { ")
	sep := ""
	for _, k := range keys {
		c.b.WriteString(sep)
		c.b.WriteString(`key "`)
		c.b.WriteString(c.name("key name", k))
		c.b.WriteByte('"')
		sep = "; "
	}
	for _, els := range rest {
		for _, e := range els {
			c.b.WriteString(sep)
			c.b.WriteString(e)
			sep = "; "
		}
	}
	c.b.WriteString("; };\n")
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
