package rndc

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"git.unkin.net/unkin/bind-operator/internal/keyalg"
)

// Algorithm is the HMAC that signs control messages. The values are BIND's
// DST algorithm numbers, which travel as the first byte of the hsha field.
type Algorithm uint8

// The algorithms named accepts on the control channel.
const (
	HMACMD5    Algorithm = 157
	HMACSHA1   Algorithm = 161
	HMACSHA224 Algorithm = 162
	HMACSHA256 Algorithm = 163
	HMACSHA384 Algorithm = 164
	HMACSHA512 Algorithm = 165
)

// algorithms are the named.conf names of the DST numbers; keyalg has
// their hashes.
var algorithms = map[Algorithm]string{
	HMACMD5:    "hmac-md5",
	HMACSHA1:   "hmac-sha1",
	HMACSHA224: "hmac-sha224",
	HMACSHA256: "hmac-sha256",
	HMACSHA384: "hmac-sha384",
	HMACSHA512: "hmac-sha512",
}

// String returns the algorithm's named.conf name.
func (a Algorithm) String() string {
	if name, ok := algorithms[a]; ok {
		return name
	}
	return fmt.Sprintf("Algorithm(%d)", uint8(a))
}

// ParseAlgorithm accepts a named.conf algorithm name (hmac-sha256, ...).
func ParseAlgorithm(name string) (Algorithm, error) {
	name = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
	for a, n := range algorithms {
		if n == name {
			return a, nil
		}
	}
	return 0, fmt.Errorf("rndc: unsupported algorithm %q", name)
}

// Key is a control channel key. The secret is held behind an unexported
// pointer: fmt never follows pointers nested inside values, and String,
// GoString, Format and LogValue print the key with the secret masked, so a
// Key cannot leak into a log line or an error by accident.
type Key struct {
	// Name is the key's name in named.conf. It is not sent on the wire (the
	// server tries each key of the controls statement) and only labels logs.
	Name      string
	Algorithm Algorithm
	secret    *secret
}

type secret struct{ b []byte }

// NewKey builds a key from named.conf-style parts: the algorithm name and the
// base64 secret.
func NewKey(name, algorithm, secretBase64 string) (Key, error) {
	alg, err := ParseAlgorithm(algorithm)
	if err != nil {
		return Key{}, err
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(secretBase64))
	if err != nil {
		// Never echo the input: it is the secret.
		return Key{}, fmt.Errorf("rndc: key %q: secret is not valid base64", name)
	}
	if len(b) == 0 {
		return Key{}, fmt.Errorf("rndc: key %q: empty secret", name)
	}
	return Key{Name: name, Algorithm: alg, secret: &secret{b: b}}, nil
}

const masked = "[redacted]"

func (k Key) String() string {
	return fmt.Sprintf("rndc key %q (%s, secret %s)", k.Name, k.Algorithm, masked)
}

// GoString masks the secret for %#v too.
func (k Key) GoString() string { return k.String() }

// Format masks the secret for every verb, including %+v and %x.
func (k Key) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// LogValue masks the secret in log/slog output.
func (k Key) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", k.Name), slog.String("algorithm", k.Algorithm.String()), slog.String("secret", masked))
}

func (k Key) valid() error {
	if k.secret == nil || len(k.secret.b) == 0 {
		return errors.New("rndc: key has no secret (use NewKey)")
	}
	if _, ok := algorithms[k.Algorithm]; !ok {
		return fmt.Errorf("rndc: unsupported algorithm %s", k.Algorithm)
	}
	return nil
}

// The signature field layouts, as BIND emits them: hmd5 holds the base64
// HMAC-MD5 digest without its "==" padding (22 bytes); hsha holds the
// algorithm byte followed by the padded base64 digest, zero-filled to 88
// bytes (the base64 length of a SHA-512 digest).
const (
	hmd5Len = 22
	hshaLen = 88
)

// digest returns the signature field value for data.
func (k Key) digest(data []byte) []byte {
	m := hmac.New(keyalg.Hash(algorithms[k.Algorithm]), k.secret.b)
	m.Write(data)
	b64 := base64.StdEncoding.AppendEncode(nil, m.Sum(nil))
	if k.Algorithm == HMACMD5 {
		return b64[:hmd5Len]
	}
	out := make([]byte, 1+hshaLen)
	out[0] = byte(k.Algorithm)
	copy(out[1:], b64)
	return out
}

func (k Key) field() string {
	if k.Algorithm == HMACMD5 {
		return "hmd5"
	}
	return "hsha"
}

// encode builds a signed frame (length prefix included): version, an _auth
// entry whose digest covers every byte after it, then the entries of t.
func (k Key) encode(t Table) ([]byte, error) {
	if err := k.valid(); err != nil {
		return nil, err
	}
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], protocolVersion)
	placeholder := make([]byte, len(k.digest(nil)))
	buf, err := appendEntries(buf, Table{entry("_auth", Table{entry(k.field(), Binary(placeholder))})})
	if err != nil {
		return nil, err
	}
	signedFrom := len(buf)
	if buf, err = appendEntries(buf, t); err != nil {
		return nil, err
	}
	copy(buf[signedFrom-len(placeholder):signedFrom], k.digest(buf[signedFrom:]))
	binary.BigEndian.PutUint32(buf[:4], uint32(len(buf)-4))
	return buf, nil
}

// ErrBadAuth means a message was unsigned or its signature did not verify.
var ErrBadAuth = errors.New("rndc: message signature missing or invalid")

// verify checks that payload (a decoded frame without its length prefix)
// carries a valid signature by k over the bytes after its leading _auth.
func (k Key) verify(d decoded, payload []byte) error {
	if d.signedFrom < 0 {
		return ErrBadAuth
	}
	auth, ok := d.table.Table("_auth")
	if !ok {
		return ErrBadAuth
	}
	got, ok := auth.Get(k.field()).(Binary)
	if !ok {
		return ErrBadAuth
	}
	if !hmac.Equal(got, k.digest(payload[d.signedFrom:])) {
		return ErrBadAuth
	}
	return nil
}
