package records

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// supported maps the record types the operator manages (the API's
// v1alpha1.RecordTypes) to their wire type.
var supported = func() map[string]uint16 {
	m := make(map[string]uint16, len(v1alpha1.RecordTypes))
	for _, t := range v1alpha1.RecordTypes {
		m[string(t)] = dns.StringToType[string(t)]
	}
	return m
}()

// supportedList is the types for messages, in the API's order.
var supportedList = func() string {
	names := make([]string, len(v1alpha1.RecordTypes))
	for i, t := range v1alpha1.RecordTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}()

// IsSupported reports whether t (uppercase) is a managed record type.
func IsSupported(t string) bool { _, ok := supported[t]; return ok }

// ParseRR parses one value of type rrtype at owner name (relative or
// absolute) in zone, the way a zone file with $ORIGIN zone would. It refuses
// anything that is not exactly one record: control characters (a newline
// would start a second record) and trailing records.
func ParseRR(zone, name, rrtype string, ttl uint32, value string) (dns.RR, error) {
	t := strings.ToUpper(rrtype)
	if !IsSupported(t) {
		return nil, fmt.Errorf("record type %q is not supported; use one of %s", rrtype, supportedList)
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 || c == 0x7f {
			return nil, fmt.Errorf("value contains a control character (byte %d); write it as a \\DDD escape inside a quoted TXT string", c)
		}
	}
	v := strings.TrimSpace(value)
	if v == "" {
		return nil, fmt.Errorf("value must not be empty")
	}
	if t == "TXT" && !strings.HasPrefix(v, `"`) {
		v = quoteTXT(v)
	}
	line := fmt.Sprintf("%s %d IN %s %s\n", FQDN(zone, name), ttl, t, v)
	zp := dns.NewZoneParser(strings.NewReader(line), ZoneFQDN(zone), "")
	zp.SetIncludeAllowed(false)
	rr, ok := zp.Next()
	if err := zp.Err(); err != nil {
		return nil, fmt.Errorf("not valid %s data: %s", t, parseErrText(err))
	}
	if !ok || rr == nil {
		return nil, fmt.Errorf("not valid %s data", t)
	}
	if _, more := zp.Next(); more || zp.Err() != nil {
		return nil, fmt.Errorf("holds more than one record; put each record in its own value")
	}
	if rr.Header().Rrtype != supported[t] {
		return nil, fmt.Errorf("not valid %s data", t)
	}
	if err := checkDigest(rr); err != nil {
		return nil, fmt.Errorf("not valid %s data: %v", t, err)
	}
	lowerNames(rr)
	return rr, nil
}

// checkDigest rejects hex fields that miekg/dns accepts empty or unchecked;
// BIND would refuse the zone or the UPDATE.
func checkDigest(rr dns.RR) error {
	var h string
	switch r := rr.(type) {
	case *dns.DS:
		h = r.Digest
	case *dns.TLSA:
		h = r.Certificate
	case *dns.SSHFP:
		h = r.FingerPrint
	default:
		return nil
	}
	if h == "" {
		return fmt.Errorf("the digest is missing")
	}
	if _, err := hex.DecodeString(h); err != nil || len(h)%2 != 0 {
		return fmt.Errorf("the digest must be an even number of hex digits")
	}
	return nil
}

// CanonicalValue returns the canonical presentation of one value: the
// rdata as re-printed by miekg/dns after lowerNames.
func CanonicalValue(zone, name, rrtype, value string) (string, error) {
	rr, err := ParseRR(zone, name, rrtype, 0, value)
	if err != nil {
		return "", err
	}
	return Rdata(rr), nil
}

// Rdata is rr's presentation without its header.
func Rdata(rr dns.RR) string {
	return strings.TrimPrefix(rr.String(), rr.Header().String())
}

// quoteTXT turns a literal string into one quoted TXT character string,
// escaping the two characters that end or escape it.
func quoteTXT(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// lowerNames lowercases the domain names in rdata: DNS names compare
// case-insensitively, so two spellings must canonicalise to one value. Case
// matters in TXT and CAA values, which are left alone; hex digests are
// lowercased where miekg/dns would print them as given.
func lowerNames(rr dns.RR) {
	switch r := rr.(type) {
	case *dns.CNAME:
		r.Target = strings.ToLower(r.Target)
	case *dns.DNAME:
		r.Target = strings.ToLower(r.Target)
	case *dns.NS:
		r.Ns = strings.ToLower(r.Ns)
	case *dns.PTR:
		r.Ptr = strings.ToLower(r.Ptr)
	case *dns.MX:
		r.Mx = strings.ToLower(r.Mx)
	case *dns.SRV:
		r.Target = strings.ToLower(r.Target)
	case *dns.NAPTR:
		r.Replacement = strings.ToLower(r.Replacement)
	case *dns.SVCB:
		r.Target = strings.ToLower(r.Target)
	case *dns.HTTPS:
		r.Target = strings.ToLower(r.Target)
	case *dns.TLSA:
		r.Certificate = strings.ToLower(r.Certificate)
	case *dns.SSHFP:
		r.FingerPrint = strings.ToLower(r.FingerPrint)
	case *dns.CAA:
		r.Tag = strings.ToLower(r.Tag)
	}
}

// parseErrText shortens miekg/dns' parse errors, which repeat the whole
// synthesised line, to the part that names the problem.
func parseErrText(err error) string {
	if pe, ok := err.(*dns.ParseError); ok {
		s := pe.Error()
		if i := strings.Index(s, ": "); i >= 0 {
			s = s[i+2:]
		}
		if j := strings.Index(s, " at line"); j >= 0 {
			s = s[:j]
		}
		return s
	}
	return err.Error()
}
