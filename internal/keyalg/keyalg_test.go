package keyalg

import "testing"

// The digest sizes pin each name to its hash: a swapped entry signs with
// the wrong HMAC, which named rejects.
func TestHash(t *testing.T) {
	for name, size := range map[string]int{
		"hmac-md5": 16, "hmac-sha1": 20, "hmac-sha224": 28,
		"hmac-sha256": 32, "hmac-sha384": 48, "hmac-sha512": 64,
	} {
		h := Hash(name)
		if h == nil {
			t.Fatalf("Hash(%q) = nil", name)
		}
		if got := h().Size(); got != size {
			t.Errorf("Hash(%q) digest is %d bytes, want %d", name, got, size)
		}
	}
	for _, name := range []string{"", "hmac-sha256.", "HMAC-SHA256", "hmac-md5.sig-alg.reg.int.", "gss-tsig"} {
		if Hash(name) != nil {
			t.Errorf("Hash(%q) is not nil", name)
		}
	}
}
