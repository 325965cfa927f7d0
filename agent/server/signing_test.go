package server

import "testing"

// zoneSecure reads named's zonestatus text, untrusted like the rest of it:
// only a `secure: yes` line counts.
func TestZoneSecure(t *testing.T) {
	for text, want := range map[string]bool{
		"name: a.test\ntype: primary\nsecure: yes\ninline signing: no\n": true,
		"name: a.test\nsecure: no\n":                                     false,
		"name: a.test\ntype: primary\n":                                  false,
		"secure:yes":                                                     true,
		"secure: yes please":                                             false,
		"insecure: yes\nsecure: no":                                      false,
		"":                                                               false,
	} {
		if got := zoneSecure(text); got != want {
			t.Errorf("zoneSecure(%q) = %v, want %v", text, got, want)
		}
	}
}
