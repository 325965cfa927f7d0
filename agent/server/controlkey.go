package server

import (
	"errors"
	"fmt"
	"os"

	"git.unkin.net/unkin/bind-operator/internal/namedconf"
	"git.unkin.net/unkin/bind-operator/rndc"
)

// maxKeyFile bounds control.conf: one key statement is ~150 bytes.
const maxKeyFile = 64 << 10

// LoadControlKey reads the rndc control key from a named.conf-style file
// (render's control.conf: `key "name" { algorithm hmac-sha256; secret
// "..."; };`). Errors never contain the secret or the file's content.
func LoadControlKey(path string) (rndc.Key, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return rndc.Key{}, fmt.Errorf("control key: %w", err)
	}
	if fi.Size() > maxKeyFile {
		return rndc.Key{}, fmt.Errorf("control key: %s is larger than %d bytes", path, maxKeyFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return rndc.Key{}, fmt.Errorf("control key: %w", err)
	}
	k, err := ParseControlKey(string(b))
	if err != nil {
		return rndc.Key{}, fmt.Errorf("control key %s: %w", path, err)
	}
	return k, nil
}

// ParseControlKey parses the first key statement of a named.conf fragment.
// Comments (#, //, /* */) are skipped; other statements before the key
// are skipped as whole statements.
func ParseControlKey(conf string) (rndc.Key, error) {
	keys, err := parseKeys(conf, 1)
	if err != nil {
		return rndc.Key{}, err
	}
	if len(keys) == 0 {
		return rndc.Key{}, errors.New("no key statement found")
	}
	return rndc.NewKey(keys[0].name, keys[0].algorithm, keys[0].secret)
}

// keyStatement is one `key "name" { algorithm ...; secret "..."; };`.
type keyStatement struct{ name, algorithm, secret string }

// parseKeys parses up to limit key statements (0: all) of a named.conf
// fragment (internal/namedconf: comments skipped, other statements
// ignored; errors never quote the text).
func parseKeys(conf string, limit int) ([]keyStatement, error) {
	stmts, err := namedconf.Parse("", conf)
	if err != nil {
		return nil, err
	}
	var out []keyStatement
	for _, st := range stmts {
		if limit > 0 && len(out) >= limit {
			break
		}
		if st.Keyword() != "key" || !st.HasBlock {
			continue
		}
		k := keyStatement{name: st.Arg(0)}
		if a := st.Find("algorithm"); a != nil {
			k.algorithm = a.Arg(0)
		}
		if x := st.Find("secret"); x != nil {
			k.secret = x.Arg(0)
		}
		if k.algorithm == "" || k.secret == "" {
			return nil, fmt.Errorf("key %q: needs both algorithm and secret", k.name)
		}
		out = append(out, k)
	}
	return out, nil
}
