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

// checkTransfer validates an AXFR's records: they must start and end with
// the zone's SOA (same serial), and every owner must lie inside the zone.
// It returns the records without the closing SOA.
func checkTransfer(zone string, rrs []dns.RR) ([]dns.RR, error) {
	if len(rrs) < 2 {
		return nil, fmt.Errorf("dnsclient: AXFR of %s: %d records, want at least the two SOAs", zone, len(rrs))
	}
	first, ok1 := rrs[0].(*dns.SOA)
	last, ok2 := rrs[len(rrs)-1].(*dns.SOA)
	if !ok1 || !ok2 || first == nil || last == nil {
		return nil, fmt.Errorf("dnsclient: AXFR of %s: not framed by SOA records", zone)
	}
	if !strings.EqualFold(first.Hdr.Name, zone) || first.Serial != last.Serial {
		return nil, fmt.Errorf("dnsclient: AXFR of %s: SOA owner %q or serials %d/%d do not match", zone, first.Hdr.Name, first.Serial, last.Serial)
	}
	for _, rr := range rrs {
		if rr == nil || rr.Header() == nil {
			return nil, fmt.Errorf("dnsclient: AXFR of %s: empty record", zone)
		}
		if !dns.IsSubDomain(zone, rr.Header().Name) {
			return nil, fmt.Errorf("dnsclient: AXFR of %s: record %q outside the zone", zone, rr.Header().Name)
		}
	}
	return rrs[:len(rrs)-1], nil
}
