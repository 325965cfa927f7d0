package server

import (
	"errors"
	"fmt"
	"os"
	"strings"

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
// fragment.
func parseKeys(conf string, limit int) ([]keyStatement, error) {
	toks, err := confTokens(conf)
	if err != nil {
		return nil, err
	}
	var out []keyStatement
	for i := 0; i < len(toks) && (limit == 0 || len(out) < limit); i++ {
		if toks[i] != "key" || i+2 >= len(toks) || toks[i+2] != "{" {
			continue
		}
		k := keyStatement{name: unquote(toks[i+1])}
		j := i + 3
		for j < len(toks) && toks[j] != "}" {
			// Each clause is `<word> <value> ;`.
			if j+2 >= len(toks) || toks[j+2] != ";" {
				return nil, fmt.Errorf("key %q: malformed statement", k.name)
			}
			switch toks[j] {
			case "algorithm":
				k.algorithm = unquote(toks[j+1])
			case "secret":
				k.secret = unquote(toks[j+1])
			}
			j += 3
		}
		if j >= len(toks) {
			return nil, fmt.Errorf("key %q: missing '}'", k.name)
		}
		if k.algorithm == "" || k.secret == "" {
			return nil, fmt.Errorf("key %q: needs both algorithm and secret", k.name)
		}
		out = append(out, k)
		i = j
	}
	return out, nil
}

// confTokens splits named.conf text into words, quoted strings (kept with
// their quotes) and the punctuation { } ;, dropping comments.
func confTokens(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || (c == '/' && i+1 < len(s) && s[i+1] == '/'):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, errors.New("unterminated comment")
			}
			i += end + 4
		case c == '{' || c == '}' || c == ';':
			out = append(out, string(c))
			i++
		case c == '"':
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 {
				return nil, errors.New("unterminated string")
			}
			out = append(out, s[i:i+end+2])
			i += end + 2
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r\n{};\"#", rune(s[j])) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out, nil
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}
