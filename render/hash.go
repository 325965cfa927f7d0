package render

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
)

// ConfigHash is the sha256 (hex) of everything the pods load: ConfigData
// and SecretData. It goes on the pod template, so it must change exactly
// when a byte of either changes (docs/behaviours.md, "Hashed roll"). Keys
// are sorted, and every section, key and value is length-prefixed, so no
// two different Results share an encoding: {"ab":"c"} and {"a":"bc"}
// differ, and so do a key moving from ConfigData to SecretData.
func ConfigHash(r Result) string {
	h := sha256.New()
	// The strings go through one buffer, not a []byte copy each: a large
	// cluster's named.conf variants are megabytes.
	buf := make([]byte, 32<<10)
	writeString := func(s string) {
		writeLen(h, len(s))
		for len(s) > 0 {
			n := copy(buf, s)
			h.Write(buf[:n])
			s = s[n:]
		}
	}
	writeString("bind-operator/config-hash/v1")
	writeLen(h, len(r.ConfigData))
	for _, k := range sortedKeys(r.ConfigData) {
		writeString(k)
		writeString(r.ConfigData[k])
	}
	writeLen(h, len(r.SecretData))
	for _, k := range sortedKeys(r.SecretData) {
		writeString(k)
		writeField(h, r.SecretData[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeLen(h hash.Hash, n int) {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(n))
	h.Write(buf[:])
}

func writeField(h hash.Hash, b []byte) {
	writeLen(h, len(b))
	h.Write(b)
}
