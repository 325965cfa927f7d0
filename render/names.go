package render

import (
	"fmt"
	"net/netip"
	"strings"
)

// quote returns s as a quoted named.conf string. CRD schemas and webhooks
// already restrict names, but render is the last line of defence against
// config injection: a name that could close its string or its block is an
// error, never escaped and emitted.
func quote(what, s string) (string, error) {
	if err := safeName(what, s); err != nil {
		return "", err
	}
	return `"` + s + `"`, nil
}

// nameOK says whether safeName accepts s. The hot paths of a large config
// ask it first and build the name of what they check (and its error) only
// when it says no.
func nameOK(s string) bool { return s != "" && badByte(s) < 0 }

func safeName(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s is empty", what)
	}
	i := badByte(s)
	if i < 0 {
		return nil
	}
	if r := rune(s[i]); r > ' ' && r != 0x7f {
		return fmt.Errorf("%s %q contains %q, which cannot appear in named.conf; rename it", what, s, r)
	}
	return fmt.Errorf("%s %q contains whitespace or a control character; rename it", what, s)
}

// badByte is the index of the first byte of s that could close a
// named.conf string or block (or start a comment), or -1. Bytes, not
// runes: every character refused is ASCII, and a byte of a multi-byte
// character is never one of them.
func badByte(s string) int {
	for i := 0; i < len(s); i++ {
		if badBytes[s[i]] {
			return i
		}
	}
	return -1
}

// badBytes are the bytes badByte looks for: whitespace and the other
// control characters, and what ends a string or a block or starts a
// comment. A table, as every name of a large config passes through here.
var badBytes = func() (t [256]bool) {
	for b := range ' ' + 1 {
		t[b] = true
	}
	for _, b := range []byte{'"', ';', '{', '}', '\\', '#', 0x7f} {
		t[b] = true
	}
	return t
}()

// Zone names and the other names of the objects arrive in the canonical
// form the webhooks store (package records: lowercase, no trailing dot,
// "." for the root) and are used as they are; records.ZoneFQDN adds the
// dot where BIND wants an absolute name. quote and safeName still refuse
// anything that could escape named.conf.

// zoneStem is the file name stem of a zone. The root has no name of its
// own; "_root" cannot clash with a real zone a cluster would serve (a label
// starting with "_" is never a TLD).
func zoneStem(name string) string {
	if name == "." {
		return "_root"
	}
	return name
}

// checkAddress accepts an IP address or CIDR prefix and returns it in its
// canonical text form, so "2001:DB8::1" and "2001:db8::1" render alike.
func checkAddress(what, s string) (string, error) {
	// An address never holds a "/": a prefix is parsed as one at once,
	// not after a failed (and allocating) parse as an address.
	if !strings.Contains(s, "/") {
		if a, err := netip.ParseAddr(s); err == nil {
			if a.Zone() != "" {
				return "", fmt.Errorf("%s %q has an interface zone, which BIND does not accept here", what, s)
			}
			return canonicalAddr(s, a), nil
		}
	} else if p, err := netip.ParsePrefix(s); err == nil {
		// BIND rejects a prefix with host bits set ("address/prefix length
		// mismatch"); the CEL rule accepts it, so mask here.
		return canonicalPrefix(s, p.Masked()), nil
	}
	return "", fmt.Errorf("%s %q is neither an IP address nor a CIDR prefix", what, s)
}

func checkIP(what, s string) (string, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return "", fmt.Errorf("%s %q is not an IP address", what, s)
	}
	return canonicalAddr(s, a), nil
}

// canonicalAddr is a's text form, which is s itself when s is written
// that way already: the webhooks store addresses canonical, so a large
// config reuses its input's strings rather than making each anew.
func canonicalAddr(s string, a netip.Addr) string {
	var buf [64]byte // an IPv6 address with a zone is at most 56 bytes
	if b := a.AppendTo(buf[:0]); string(b) != s {
		return string(b)
	}
	return s
}

// canonicalPrefix is canonicalAddr for a prefix. (One generic function
// for both makes its buffer escape to the heap: 17,000 more allocations
// in a render of 10,000 ACLs.)
func canonicalPrefix(s string, p netip.Prefix) string {
	var buf [64]byte // an IPv6 prefix is at most 43 bytes
	if b := p.AppendTo(buf[:0]); string(b) != s {
		return string(b)
	}
	return s
}
