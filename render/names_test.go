package render

import (
	"strings"
	"testing"
)

// checkAddress and checkIP give the canonical text, whether or not the
// input is written that way, and refuse what named would.
func TestCheckAddress(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "198.18.0.1", want: "198.18.0.1"},
		{in: "198.18.0.0/15", want: "198.18.0.0/15"},
		{in: "198.18.3.7/15", want: "198.18.0.0/15"}, // host bits masked
		{in: "2001:db8::53", want: "2001:db8::53"},
		{in: "2001:DB8:0::53", want: "2001:db8::53"},
		{in: "2001:DB8::1/32", want: "2001:db8::/32"},
		{in: "::ffff:198.18.0.1", want: "::ffff:198.18.0.1"},
		{in: "fe80::1%eth0", err: "interface zone"},
		{in: "198.18.0.1/33", err: "neither an IP address nor a CIDR prefix"},
		{in: "198.18.0.1/", err: "neither an IP address nor a CIDR prefix"},
		{in: "host.example", err: "neither an IP address nor a CIDR prefix"},
		{in: "", err: "neither an IP address nor a CIDR prefix"},
	} {
		got, err := checkAddress("x", tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("checkAddress(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("checkAddress(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for in, want := range map[string]string{"198.18.0.1": "198.18.0.1", "2001:DB8::1": "2001:db8::1", "2001:db8::1": "2001:db8::1"} {
		if got, err := checkIP("x", in); err != nil || got != want {
			t.Errorf("checkIP(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"198.18.0.0/15", "fe80::1%eth0", ""} {
		if got, err := checkIP("x", in); err == nil {
			t.Errorf("checkIP(%q) = %q; want an error", in, got)
		}
	}
}

// badByte finds the first byte that could end a string or a block or
// start a comment, whatever surrounds it, and nothing else.
func TestBadByte(t *testing.T) {
	for b := range 256 {
		bad := b <= ' ' || strings.ContainsRune("\";{}\\#\x7f", rune(b))
		for _, s := range []string{string([]byte{byte(b)}), "ok-" + string([]byte{byte(b)}) + "-ok"} {
			want := -1
			if bad {
				want = strings.IndexByte(s, byte(b))
			}
			if got := badByte(s); got != want {
				t.Errorf("badByte(%q) = %d, want %d", s, got, want)
			}
		}
	}
	if got := badByte("zone.example"); got != -1 {
		t.Errorf("badByte(zone.example) = %d", got)
	}
	if got := badByte("zöne\"x"); got != len("zöne") {
		t.Errorf("badByte(zöne\"x) = %d, want %d", got, len("zöne"))
	}
}
