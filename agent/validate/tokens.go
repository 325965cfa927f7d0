package validate

// token is one lexical element of named.conf: a word ('w'), a quoted
// string ('s', val without the quotes), or one of '{', '}', ';'.
type token struct {
	kind byte
	val  string
}

// tokenize splits a clause into tokens, refusing everything that named's
// lexer would treat specially and we do not need: comments (#, //, /* */),
// backslash escapes, control characters, non-ASCII, and strings that span
// lines or never end.
func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c < ' ' || c >= 0x7f:
			return nil, fail("clause", "contains a control or non-ASCII character at byte %d", i)
		case c == '\\':
			return nil, fail("clause", "contains a backslash at byte %d", i)
		case c == '#' || (c == '/' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == '*')):
			return nil, fail("clause", "contains a comment at byte %d; comments are not allowed", i)
		case c == '{' || c == '}' || c == ';':
			out = append(out, token{kind: c, val: string(c)})
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] < ' ' || s[j] >= 0x7f || s[j] == '\\' {
					return nil, fail("clause", "a quoted string contains a control character, backslash or non-ASCII byte at byte %d", j)
				}
				j++
			}
			if j >= len(s) {
				return nil, fail("clause", "has an unterminated quoted string")
			}
			out = append(out, token{kind: 's', val: s[i+1 : j]})
			i = j + 1
		case c == '\'':
			// named accepts no single quotes; a shell might.
			return nil, fail("clause", "contains a single quote at byte %d", i)
		default:
			j := i
			for j < len(s) && isWordByte(s[j]) {
				if s[j] == '/' && j+1 < len(s) && (s[j+1] == '/' || s[j+1] == '*') {
					return nil, fail("clause", "contains a comment at byte %d; comments are not allowed", j)
				}
				j++
			}
			if j == i {
				return nil, fail("clause", "contains %q at byte %d", rune(c), i)
			}
			out = append(out, token{kind: 'w', val: s[i:j]})
			i = j
		}
		if len(out) > MaxClauseTokens {
			return nil, fail("clause", "has more than %d tokens", MaxClauseTokens)
		}
	}
	return out, nil
}

// isWordByte: the characters of unquoted named.conf words we accept:
// option names, numbers, addresses and prefixes (IPv4, IPv6, CIDR), and
// negation ('!').
func isWordByte(c byte) bool {
	return isAlnum(c) || c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '!' || c == '*'
}
