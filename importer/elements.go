package importer

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// The two kinds of list element both inputs write as words — a named.conf
// statement's, and the earlier bind-operator's strings — read one way.

// element reads one address_match_list element: "[!] address|prefix|
// built-in|acl-name" or "[!] key name". key and acl give the object that
// holds a BIND key or ACL name ("" when none does); why says why the words
// are not an element.
func element(w []Word, key, acl func(string) string) (el v1.AddressMatchElement, why string) {
	text := wordsText(w)
	if len(w) > 0 && w[0].Text == "!" && !w[0].Quoted {
		el.Negate, w = true, w[1:]
	}
	switch {
	case len(w) == 2 && strings.EqualFold(w[0].Text, "key"):
		if el.KeyRef = key(w[1].Text); el.KeyRef == "" {
			return el, fmt.Sprintf("key %q is not imported", w[1].Text)
		}
	case len(w) == 1:
		x := w[0].Text
		if b := v1.BuiltinACL(strings.ToLower(x)); slices.Contains(v1.BuiltinACLs, b) {
			el.Builtin = b
		} else if a, ok := address(x); ok {
			el.Address = a
		} else if el.ACLRef = acl(x); el.ACLRef == "" {
			return el, fmt.Sprintf("element %q is neither an address, a prefix, a key, a built-in nor an imported acl", x)
		}
	default:
		return el, fmt.Sprintf("element %q has no counterpart", text)
	}
	return el, ""
}

// address accepts an address or a prefix, as BIND writes them (a prefix
// may leave out trailing zero octets: 10/8).
func address(s string) (string, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String(), true
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.String(), true
	}
	if i := strings.IndexByte(s, '/'); i > 0 && !strings.Contains(s, ":") {
		octets := strings.Split(s[:i], ".")
		for len(octets) < 4 {
			octets = append(octets, "0")
		}
		if p, err := netip.ParsePrefix(strings.Join(octets, ".") + s[i:]); err == nil {
			return p.String(), true
		}
	}
	return "", false
}

// server reads "address [port N] [key K]", the words of a forwarder
// (key nil: no key allowed) or a primary (key gives the object that holds
// a BIND key name, "" when none does).
func server(w []Word, key func(string) string) (v1.RemoteServer, string) {
	text := wordsText(w)
	if len(w) == 0 {
		return v1.RemoteServer{}, "an empty server"
	}
	a, err := netip.ParseAddr(w[0].Text)
	if err != nil {
		return v1.RemoteServer{}, fmt.Sprintf("server %q is not an address", text)
	}
	rs := v1.RemoteServer{Address: a.String()}
	for rest := w[1:]; len(rest) > 0; rest = rest[2:] {
		if len(rest) < 2 {
			return rs, fmt.Sprintf("server %q: only an address, a port and (for primaries) a key are imported", text)
		}
		switch {
		case strings.EqualFold(rest[0].Text, "port"):
			p, why := portArg(rest[:2])
			if why != "" {
				return rs, why
			}
			rs.Port = p
		case strings.EqualFold(rest[0].Text, "key") && key != nil:
			k := key(rest[1].Text)
			if k == "" {
				return rs, fmt.Sprintf("key %q is not imported", rest[1].Text)
			}
			rs.KeyRef = &v1.LocalObjectReference{Name: k}
		default:
			return rs, fmt.Sprintf("server %q: only an address, a port and (for primaries) a key are imported (TLS transfers are not yet)", text)
		}
	}
	return rs, ""
}

// portArg reads "port N" (or nothing).
func portArg(w []Word) (*int32, string) {
	if len(w) == 0 {
		return nil, ""
	}
	if len(w) == 2 && strings.EqualFold(w[0].Text, "port") {
		n, err := strconv.ParseInt(w[1].Text, 10, 32)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Sprintf("port %q is not a port number", w[1].Text)
		}
		return ptr.To(int32(n)), ""
	}
	return nil, fmt.Sprintf("%q has no counterpart (only an address and a port are imported)", wordsText(w))
}

func wordsText(w []Word) string {
	parts := make([]string, len(w))
	for i, x := range w {
		parts[i] = x.Text
	}
	return strings.Join(parts, " ")
}
