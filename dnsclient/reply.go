package dnsclient

import (
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// Replies come from the network and are untrusted. miekg/dns bounds the
// parsing of the wire format; the functions here interpret a parsed reply
// and never index into it without checking, never panic.

// RcodeError is a reply with a non-success rcode: named refused the
// message. Rcode names what went wrong (YXRRSET: a prerequisite said "must
// not exist" and it did; NXRRSET: a prerequisite's RRset differed or was
// absent; NOTAUTH: wrong key or not authoritative; REFUSED: policy).
type RcodeError struct {
	Op    string // "update", "query", "transfer"
	Zone  string
	Rcode int
	// TSIGError is the TSIG error the server reported (dns.RcodeBadSig,
	// dns.RcodeBadKey, dns.RcodeBadTime), 0 if none.
	TSIGError uint16
	// Verified tells whether the reply carried a valid signature by our key.
	// Replies to badly signed requests cannot be signed; they are reported
	// but only as failures, never trusted as successes.
	Verified bool
}

func (e *RcodeError) Error() string {
	s := fmt.Sprintf("dns %s of zone %s: %s", e.Op, e.Zone, e.RcodeName())
	if e.TSIGError != 0 {
		s += " (TSIG " + tsigErrorName(e.TSIGError) + ")"
	}
	if !e.Verified {
		s += " [reply not signed by our key]"
	}
	return s
}

// RcodeName is the rcode's mnemonic, e.g. "YXRRSET".
func (e *RcodeError) RcodeName() string { return rcodeName(e.Rcode) }

func rcodeName(rc int) string {
	if s, ok := dns.RcodeToString[rc]; ok {
		return s
	}
	return fmt.Sprintf("RCODE%d", rc)
}

func tsigErrorName(code uint16) string {
	switch int(code) {
	case dns.RcodeBadSig:
		return "BADSIG"
	case dns.RcodeBadKey:
		return "BADKEY"
	case dns.RcodeBadTime:
		return "BADTIME"
	case dns.RcodeBadTrunc:
		return "BADTRUNC"
	}
	return rcodeName(int(code))
}

// ErrUnverifiedReply means a reply claimed success but its signature was
// missing or invalid.
var ErrUnverifiedReply = errors.New("dnsclient: reply claims success but is not signed by our key")

// replyAuth decides whether a reply is authenticated: with a key, the reply
// must carry a TSIG that verified and reports no TSIG error.
func replyAuth(signed bool, r *dns.Msg, verifyErr error) error {
	if !signed {
		return nil
	}
	if verifyErr != nil {
		return verifyErr
	}
	t := r.IsTsig()
	if t == nil {
		return dns.ErrNoSig
	}
	if t.Error != 0 {
		return fmt.Errorf("%w: server reported TSIG %s", dns.ErrAuth, tsigErrorName(t.Error))
	}
	return nil
}

// checkReply turns a reply into nil (success) or an error: an RcodeError
// for a refusal, ErrUnverifiedReply for a success without valid signature.
func checkReply(op, zone string, r *dns.Msg, authErr error) error {
	if r == nil {
		return fmt.Errorf("dnsclient: %s of zone %s: no reply", op, zone)
	}
	rc := r.Rcode
	var tsigErr uint16
	if t := r.IsTsig(); t != nil {
		tsigErr = t.Error
	}
	if rc == dns.RcodeSuccess && tsigErr == 0 {
		if authErr != nil {
			return fmt.Errorf("%w (%s of zone %s: %v)", ErrUnverifiedReply, op, zone, authErr)
		}
		return nil
	}
	if rc == dns.RcodeSuccess {
		rc = dns.RcodeNotAuth // a TSIG error in a NOERROR reply is still a refusal
	}
	return &RcodeError{Op: op, Zone: zone, Rcode: rc, TSIGError: tsigErr, Verified: authErr == nil}
}

// soaFromReply extracts the zone's SOA from an authenticated answer. It
// requires an authoritative answer whose SOA owner is the zone itself, so
// a referral or a parent zone's SOA is not mistaken for ours.
func soaFromReply(zone string, r *dns.Msg) (*dns.SOA, error) {
	if r == nil {
		return nil, errors.New("dnsclient: no reply")
	}
	if !r.Authoritative {
		return nil, fmt.Errorf("dnsclient: SOA of %s: answer is not authoritative", zone)
	}
	for _, rr := range r.Answer {
		soa, ok := rr.(*dns.SOA)
		if ok && soa.Hdr.Rrtype == dns.TypeSOA && strings.EqualFold(dns.Fqdn(soa.Hdr.Name), zone) {
			return soa, nil
		}
	}
	return nil, fmt.Errorf("dnsclient: SOA of %s: not in the answer", zone)
}

// axfrFrame checks an AXFR as it streams: it must start and end with the
// zone's SOA (same serial), and every owner must lie inside the zone.
type axfrFrame struct {
	zone  string
	first *dns.SOA
	n     int
}

// next checks one record.
func (f *axfrFrame) next(rr dns.RR) error {
	if rr == nil || rr.Header() == nil {
		return fmt.Errorf("dnsclient: AXFR of %s: empty record", f.zone)
	}
	if f.n++; f.n == 1 {
		soa, ok := rr.(*dns.SOA)
		if !ok || !strings.EqualFold(soa.Hdr.Name, f.zone) {
			return fmt.Errorf("dnsclient: AXFR of %s: does not start with the zone's SOA", f.zone)
		}
		f.first = soa
	}
	if !dns.IsSubDomain(f.zone, rr.Header().Name) {
		return fmt.Errorf("dnsclient: AXFR of %s: record %q outside the zone", f.zone, rr.Header().Name)
	}
	return nil
}

// end checks the last record (the closing SOA) and returns the serial.
func (f *axfrFrame) end(last dns.RR) (uint32, error) {
	if f.n < 2 {
		return 0, fmt.Errorf("dnsclient: AXFR of %s: %d records, want at least the two SOAs", f.zone, f.n)
	}
	soa, ok := last.(*dns.SOA)
	if !ok || soa.Serial != f.first.Serial {
		return 0, fmt.Errorf("dnsclient: AXFR of %s: not closed by the opening SOA (serial %d)", f.zone, f.first.Serial)
	}
	return f.first.Serial, nil
}
