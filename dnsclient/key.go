package dnsclient

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"log/slog"
	"strings"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/internal/keyalg"
)

// Key is a TSIG key. Its name and algorithm are normalised the way they
// appear on the wire (lower-case, fully qualified), so "update-key" and
// "update-key." are the same key.
//
// The secret sits behind an unexported pointer: fmt does not follow nested
// pointers, and String, GoString, Format and LogValue all mask it, so a Key
// (or a struct holding one) cannot print its secret into a log or an error.
type Key struct {
	Name      string // e.g. "update-key."
	Algorithm string // a dns.Hmac* name, e.g. "hmac-sha256."
	secret    *secret
}

type secret struct{ b []byte }

// tsigNames are the named.conf names of the TSIG algorithms' wire names;
// keyalg has their hashes. The wire name is the named.conf name as a
// domain name, but HMAC-MD5's, which is older (RFC 2845).
var tsigNames = map[string]string{
	dns.HmacMD5:    "hmac-md5",
	dns.HmacSHA1:   "hmac-sha1",
	dns.HmacSHA224: "hmac-sha224",
	dns.HmacSHA256: "hmac-sha256",
	dns.HmacSHA384: "hmac-sha384",
	dns.HmacSHA512: "hmac-sha512",
}

// tsigHash is the hash of a TSIG algorithm by its wire name, or nil.
func tsigHash(alg string) func() hash.Hash {
	if name, ok := tsigNames[alg]; ok {
		return keyalg.Hash(name)
	}
	return nil
}

// NewKey builds a key from named.conf-style parts: name, algorithm
// ("hmac-sha256" or the wire name "hmac-sha256.") and base64 secret.
func NewKey(name, algorithm, secretBase64 string) (Key, error) {
	name = dns.Fqdn(strings.ToLower(strings.TrimSpace(name)))
	if _, ok := dns.IsDomainName(name); !ok || name == "." {
		return Key{}, fmt.Errorf("dnsclient: key name %q is not a domain name", name)
	}
	alg := dns.Fqdn(strings.ToLower(strings.TrimSpace(algorithm)))
	if alg == "hmac-md5." {
		alg = dns.HmacMD5
	}
	if tsigHash(alg) == nil {
		return Key{}, fmt.Errorf("dnsclient: key %s: unsupported algorithm %q", name, algorithm)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(secretBase64))
	if err != nil || len(b) == 0 {
		// Never echo the input: it is the secret.
		return Key{}, fmt.Errorf("dnsclient: key %s: secret is not valid non-empty base64", name)
	}
	return Key{Name: name, Algorithm: alg, secret: &secret{b: b}}, nil
}

const masked = "[redacted]"

func (k Key) String() string {
	return fmt.Sprintf("tsig key %s (%s, secret %s)", k.Name, strings.TrimSuffix(k.Algorithm, "."), masked)
}

// GoString masks the secret for %#v.
func (k Key) GoString() string { return k.String() }

// Format masks the secret for every verb.
func (k Key) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// LogValue masks the secret in log/slog output.
func (k Key) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", k.Name), slog.String("algorithm", k.Algorithm), slog.String("secret", masked))
}

// Equal tells whether two keys have the same name, algorithm and secret,
// so a cache can tell a rotated key from the one it holds without ever
// exposing either secret.
func (k Key) Equal(o Key) bool {
	if k.Name != o.Name || k.Algorithm != o.Algorithm || (k.secret == nil) != (o.secret == nil) {
		return false
	}
	return k.secret == nil || hmac.Equal(k.secret.b, o.secret.b)
}

func (k Key) valid() bool { return k.secret != nil && tsigHash(k.Algorithm) != nil }

// provider signs and verifies with this key only. Using our own
// dns.TsigProvider keeps the secret out of miekg/dns' TsigSecret maps.
type provider struct{ k Key }

func (p provider) mac(msg []byte, t *dns.TSIG) ([]byte, error) {
	if !strings.EqualFold(dns.Fqdn(t.Hdr.Name), p.k.Name) || !strings.EqualFold(dns.Fqdn(t.Algorithm), p.k.Algorithm) {
		return nil, dns.ErrSecret
	}
	h := hmac.New(tsigHash(p.k.Algorithm), p.k.secret.b)
	h.Write(msg)
	return h.Sum(nil), nil
}

// Generate implements dns.TsigProvider.
func (p provider) Generate(msg []byte, t *dns.TSIG) ([]byte, error) { return p.mac(msg, t) }

// Verify implements dns.TsigProvider.
func (p provider) Verify(msg []byte, t *dns.TSIG) error {
	want, err := p.mac(msg, t)
	if err != nil {
		return err
	}
	got, err := hex.DecodeString(t.MAC)
	if err != nil || !hmac.Equal(got, want) {
		return dns.ErrSig
	}
	return nil
}
