package validate

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"git.unkin.net/unkin/bind-operator/internal/namedconf"
)

// Limits on a clause. A runtime zone clause is a few hundred bytes; the
// control channel refuses requests over 32 KiB anyway.
const (
	MaxClauseLength = 16 * 1024
	MaxClauseTokens = 4096
	MaxClauseDepth  = 6
)

// Clause is a checked zone clause: `{ statement; ... };`.
type Clause struct {
	// Text is the clause as given (already checked), ready for rndc.
	Text string
	// Type is the zone type (primary, secondary, ...), canonical names.
	Type string
	// File is the zone file named by the clause, "" when it names none.
	File string
	// SignsInPlace: a dnssec-policy other than none or insecure, without
	// inline signing, so named signs the zone's own data and every UPDATE
	// as it applies it.
	SignsInPlace bool
	// statements are the top-level statements in canonical form, sorted.
	statements []string
}

// zoneTypes are the zone types a runtime clause may declare, with BIND's
// legacy synonyms mapped to their current names.
var zoneTypes = map[string]string{
	"primary": "primary", "master": "primary",
	"secondary": "secondary", "slave": "secondary",
	"mirror": "mirror", "stub": "stub", "static-stub": "static-stub",
	"forward": "forward", "redirect": "redirect",
}

// forbiddenWords may not appear anywhere in a clause: statements that pull
// in other files, declare other zones, views or server-wide blocks, or load
// code into named (dlz, database "dlopen ...").
var forbiddenWords = map[string]bool{
	"include": true, "zone": true, "view": true, "options": true,
	"controls": true, "statistics-channels": true, "logging": true,
	"dlz": true, "database": true, "server": true, "trust-anchors": true,
	"managed-keys": true, "trusted-keys": true, "plugin": true,
}

// pathOptions name files or directories named reads or writes. Each must
// stay inside the data directory.
var pathOptions = map[string]bool{
	"file": true, "journal": true, "key-directory": true,
}

// ParseClause checks a zone clause and returns it parsed. dataDir is the
// directory every file the clause names must lie in (absolute; "" skips the
// check, for callers that only compare clauses).
//
// The clause must be exactly one balanced `{ ... };` block of statements
// that internal/namedconf lexes (no comments, no backslashes, no control
// characters, no non-ASCII, quoted strings without newlines), with no
// forbidden statement anywhere, nesting at most MaxClauseDepth deep, and
// exactly one `type` statement.
func ParseClause(clause, dataDir string) (*Clause, error) {
	if len(clause) > MaxClauseLength {
		return nil, fail("clause", "is %d bytes long, the limit is %d", len(clause), MaxClauseLength)
	}
	toks, err := namedconf.Lex(clause)
	if err != nil {
		var le *namedconf.Error
		if errors.As(err, &le) {
			return nil, fail("clause", "%s (byte %d)", le.Reason, le.Pos)
		}
		return nil, fail("clause", "%v", err)
	}
	if len(toks) > MaxClauseTokens {
		return nil, fail("clause", "has more than %d tokens", MaxClauseTokens)
	}
	if len(toks) < 3 || toks[0].Kind != namedconf.Open || toks[len(toks)-1].Kind != namedconf.Semi || toks[len(toks)-2].Kind != namedconf.Close {
		return nil, fail("clause", "must be a single block of the form `{ type primary; file \"...\"; };`")
	}
	// Walk the block: depth must return to zero only at the final "}",
	// and statements must end with ';' at every level.
	depth := 0
	var stmts [][]namedconf.Token
	var cur []namedconf.Token
	for i, t := range toks[:len(toks)-1] { // without the final ';'
		switch t.Kind {
		case namedconf.Open:
			depth++
			if depth > MaxClauseDepth {
				return nil, fail("clause", "nests blocks more than %d deep", MaxClauseDepth)
			}
			if depth == 1 {
				continue
			}
		case namedconf.Close:
			depth--
			if depth < 0 {
				return nil, fail("clause", "has an unbalanced '}'")
			}
			if depth == 0 {
				if i != len(toks)-2 {
					return nil, fail("clause", "has text after its closing '}'")
				}
				if len(cur) != 0 {
					return nil, fail("clause", "statement %q is not terminated by ';'", clip(join(cur)))
				}
				continue
			}
			if i+1 >= len(toks) || toks[i+1].Kind != namedconf.Semi {
				return nil, fail("clause", "a '}' must be followed by ';'")
			}
		case namedconf.Word, namedconf.String:
			if depth == 0 {
				return nil, fail("clause", "has text outside its block")
			}
			if t.Kind == namedconf.Word && forbiddenWords[strings.ToLower(t.Text)] {
				return nil, fail("clause", "may not contain %q", clip(t.Text))
			}
			// An update-policy "external" rule names a Unix socket named
			// connects to and writes to: it must lie in the data
			// directory, like the files a clause names. A relative path
			// is relative to named's working directory, the data
			// directory (render's options { directory }).
			if sock, ok := cutPrefixFold(t.Text, "local:"); ok && dataDir != "" {
				if !filepath.IsAbs(sock) {
					sock = filepath.Join(dataDir, sock)
				}
				if !within(dataDir, sock) {
					return nil, fail("clause", "socket %q lies outside the data directory %s", clip(sock), dataDir)
				}
			}
		}
		if depth == 0 {
			return nil, fail("clause", "has text outside its block")
		}
		cur = append(cur, t)
		if t.Kind == namedconf.Semi && depth == 1 {
			if len(cur) == 1 {
				return nil, fail("clause", "has an empty statement")
			}
			stmts = append(stmts, cur)
			cur = nil
		}
	}
	if depth != 0 {
		return nil, fail("clause", "has an unbalanced '{'")
	}

	c := &Clause{Text: clause}
	policy, inline := "", false
	for _, s := range stmts {
		if s[0].Kind != namedconf.Word {
			return nil, fail("clause", "statement %q must start with an option name", clip(join(s)))
		}
		name := strings.ToLower(s[0].Text)
		switch {
		case name == "type":
			if c.Type != "" {
				return nil, fail("clause", "has more than one type statement")
			}
			if len(s) != 3 {
				return nil, fail("clause", "type statement must be `type <primary|secondary|...>;`")
			}
			typ, ok := zoneTypes[strings.ToLower(s[1].Text)]
			if !ok {
				return nil, fail("clause", "zone type %q is not allowed at runtime", clip(s[1].Text))
			}
			c.Type = typ
		case pathOptions[name]:
			if len(s) != 3 || s[1].Kind != namedconf.String {
				return nil, fail("clause", "%s must be `%s \"<path>\";`", name, name)
			}
			p := s[1].Text
			if dataDir != "" && !within(dataDir, p) {
				return nil, fail("clause", "%s %q lies outside the data directory %s", name, clip(p), dataDir)
			}
			if name == "file" {
				if c.File != "" {
					return nil, fail("clause", "has more than one file statement")
				}
				c.File = p
			}
		case name == "dnssec-policy" && len(s) == 3:
			policy = strings.ToLower(s[1].Text)
		case name == "inline-signing" && len(s) == 3:
			inline = isYes(s[1].Text)
		}
		c.statements = append(c.statements, canonicalStatement(s))
	}
	if c.Type == "" {
		return nil, fail("clause", "has no type statement")
	}
	c.SignsInPlace = policy != "" && policy != "none" && policy != "insecure" && !inline
	slices.Sort(c.statements)
	return c, nil
}

// isYes reads a named.conf boolean.
func isYes(v string) bool {
	switch strings.ToLower(v) {
	case "yes", "true", "1":
		return true
	}
	return false
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// within reports whether p is an absolute path inside dir (not dir itself).
func within(dir, p string) bool {
	if !filepath.IsAbs(p) || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Equal reports whether two clauses configure the same zone: the same
// top-level statements in any order (named prints them in its own grammar
// order), tokens compared without regard to spacing or quoting, and zone
// type synonyms (master/primary, slave/secondary) treated alike.
func (c *Clause) Equal(o *Clause) bool {
	return c != nil && o != nil && slices.Equal(c.statements, o.statements)
}

// ParseShowzone parses named's `rndc showzone` output, `zone "name" [class
// [view]] { ... };`, into a Clause for comparison with a requested one.
// named's own output is trusted no more than a request: it is checked the
// same way (without the data directory rule).
func ParseShowzone(text string) (*Clause, error) {
	i := strings.IndexByte(text, '{')
	if i < 0 {
		return nil, fail("showzone", "output has no clause")
	}
	return ParseClause(strings.TrimSpace(text[i:]), "")
}

func canonicalStatement(s []namedconf.Token) string {
	var b strings.Builder
	for i, t := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := t.Text
		if t.Kind == namedconf.Word {
			v = strings.ToLower(v)
		}
		if i == 1 && strings.EqualFold(s[0].Text, "type") {
			if typ, ok := zoneTypes[strings.ToLower(v)]; ok {
				v = typ
			}
		}
		b.WriteString(v)
	}
	return b.String()
}

func join(ts []namedconf.Token) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Text
	}
	return strings.Join(parts, " ")
}
