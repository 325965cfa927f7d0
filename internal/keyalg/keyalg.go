// Package keyalg is the one table of the HMAC algorithms a BIND key
// statement names (`algorithm hmac-sha256;`) and the hash each signs with.
// The control channel (rndc) and TSIG (dnsclient) sign with such keys;
// their wires name the algorithm each its own way (a DST number, a domain
// name), and each package keeps only that mapping to these names.
package keyalg

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
)

var hashes = map[string]func() hash.Hash{
	"hmac-md5":    md5.New,
	"hmac-sha1":   sha1.New,
	"hmac-sha224": sha256.New224,
	"hmac-sha256": sha256.New,
	"hmac-sha384": sha512.New384,
	"hmac-sha512": sha512.New,
}

// Hash returns the hash of the algorithm named.conf calls name
// (lowercase, without a final dot), or nil when BIND has no such HMAC.
func Hash(name string) func() hash.Hash { return hashes[name] }
