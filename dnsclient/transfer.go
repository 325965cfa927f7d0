package dnsclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// DefaultMaxTransferRecords bounds an AXFR/IXFR so a hostile or runaway
// server cannot make the client hold an unbounded zone in memory.
const DefaultMaxTransferRecords = 2_000_000

// DefaultMaxTransferBytes bounds an AXFR/IXFR by the records' wire size as
// well: a count alone lets a few records of 64 KiB each hold gigabytes.
const DefaultMaxTransferBytes = 256 << 20

// Serial returns the SOA serial named serves for zone: the cheap drift
// check (compare with the serial after our last write). Signed when the
// client has a key, so the answer is authenticated.
func (c *Client) Serial(ctx context.Context, zone string) (uint32, error) {
	soa, err := c.SOA(ctx, zone)
	if err != nil {
		return 0, err
	}
	return soa.Serial, nil
}

// SOA returns the zone's SOA record from an authoritative answer.
func (c *Client) SOA(ctx context.Context, zone string) (*dns.SOA, error) {
	zone = dns.Fqdn(strings.ToLower(zone))
	m := new(dns.Msg)
	m.SetQuestion(zone, dns.TypeSOA)
	m.RecursionDesired = false
	start := time.Now()
	r, authErr, err := c.exchange(ctx, m)
	if err == nil {
		err = checkReply("query", zone, r, authErr)
	}
	var soa *dns.SOA
	if err == nil {
		soa, err = soaFromReply(zone, r)
	}
	c.logExchange(ctx, "dns soa query", zone, 1, start, err)
	return soa, err
}

// AXFR transfers the whole zone. The records come back in the server's
// order, starting with the SOA; the closing SOA is dropped. Every message
// of a signed transfer is verified. The whole zone is held in memory: a
// caller that only needs part of it uses AXFREach.
func (c *Client) AXFR(ctx context.Context, zone string) ([]dns.RR, error) {
	var rrs []dns.RR
	_, err := c.AXFREach(ctx, zone, func(rr dns.RR) error {
		rrs = append(rrs, rr)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rrs, nil
}

// AXFREach transfers the zone and hands each record to fn as it arrives,
// starting with the SOA and without the closing one, so a caller that keeps
// only the records it is interested in holds only those: a drift check of a
// few declared sets in a zone of a million names stays small. The transfer
// is checked as it streams (framed by the zone's SOA at one serial, every
// owner inside the zone) and fn's records are only final once AXFREach
// returns nil: a transfer that breaks off late is an error like any other.
// An error from fn stops the transfer and is returned. It returns the
// zone's serial.
func (c *Client) AXFREach(ctx context.Context, zone string, fn func(dns.RR) error) (uint32, error) {
	zone = dns.Fqdn(strings.ToLower(zone))
	m := new(dns.Msg)
	m.SetAxfr(zone)
	f := axfrFrame{zone: zone}
	var pending dns.RR // held back one record: the last one is the closing SOA
	err := c.transfer(ctx, zone, m, func(rr dns.RR) error {
		if err := f.next(rr); err != nil {
			return err
		}
		if pending != nil {
			if err := fn(pending); err != nil {
				return err
			}
		}
		pending = rr
		return nil
	})
	if err != nil {
		return 0, err
	}
	return f.end(pending)
}

// IXFR asks for the changes since serial. The records are returned raw, as
// RFC 1995 frames them (SOA, then per version: old SOA, deletions, new SOA,
// additions, and a closing SOA); a server that cannot serve the difference
// answers with a full zone instead, which the caller tells apart by the
// second record not being a SOA.
func (c *Client) IXFR(ctx context.Context, zone string, serial uint32) ([]dns.RR, error) {
	zone = dns.Fqdn(strings.ToLower(zone))
	m := new(dns.Msg)
	m.SetIxfr(zone, serial, "ns.invalid.", "hostmaster.invalid.")
	var rrs []dns.RR
	err := c.transfer(ctx, zone, m, func(rr dns.RR) error {
		rrs = append(rrs, rr)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(rrs) == 0 {
		return nil, fmt.Errorf("dnsclient: IXFR of %s: empty", zone)
	}
	if _, ok := rrs[0].(*dns.SOA); !ok {
		return nil, fmt.Errorf("dnsclient: IXFR of %s: does not start with the SOA", zone)
	}
	return rrs, nil
}

// ErrNotIncremental is IXFRChanges' answer when the server sends the whole
// zone instead of the differences (its journal does not reach back to the
// serial asked for, or it keeps none).
var ErrNotIncremental = errors.New("dnsclient: the server answered the IXFR with the whole zone")

// IXFRChanges asks for the changes to zone since serial from and hands
// each deleted or added record to fn as it streams (added false for a
// deletion), without the SOAs that frame each version (RFC 1995). It
// returns the serial the server serves now. A server already at from
// answers with its SOA alone: no call to fn. A server that answers with
// the whole zone is ErrNotIncremental, found at the second record, so a
// large zone is not read. The changes are only final once IXFRChanges
// returns nil. soaChanged reports whether the SOA's fields other than the
// serial differ between from and now.
func (c *Client) IXFRChanges(ctx context.Context, zone string, from uint32, fn func(rr dns.RR, added bool) error) (serial uint32, soaChanged bool, err error) {
	zone = dns.Fqdn(strings.ToLower(zone))
	m := new(dns.Msg)
	m.SetIxfr(zone, from, "ns.invalid.", "hostmaster.invalid.")
	var (
		n       int
		current *dns.SOA // the first record: the version served now
		first   *dns.SOA // the version asked from
		added   bool     // after a version's second SOA: additions
		ended   bool     // the closing SOA was seen
	)
	err = c.transfer(ctx, zone, m, func(rr dns.RR) error {
		n++
		if ended {
			return fmt.Errorf("dnsclient: IXFR of %s: records after the closing SOA", zone)
		}
		if !dns.IsSubDomain(zone, rr.Header().Name) {
			return fmt.Errorf("dnsclient: IXFR of %s: record %q outside the zone", zone, rr.Header().Name)
		}
		soa, isSOA := rr.(*dns.SOA)
		isSOA = isSOA && strings.EqualFold(soa.Hdr.Name, zone)
		switch {
		case n == 1:
			if !isSOA {
				return fmt.Errorf("dnsclient: IXFR of %s: does not start with the zone's SOA", zone)
			}
			current = soa
			return nil
		case n == 2 && !isSOA:
			return ErrNotIncremental
		case n == 2:
			if soa.Serial != from {
				if soa.Serial == current.Serial {
					// An AXFR-style answer of an empty zone: SOA, SOA.
					ended = true
					return ErrNotIncremental
				}
				return fmt.Errorf("dnsclient: IXFR of %s: starts at serial %d, not %d", zone, soa.Serial, from)
			}
			first = soa
			return nil
		case isSOA:
			if added && soa.Serial == current.Serial {
				// Either the closing SOA or the old SOA of a version that
				// starts at the current serial, which cannot be: closing.
				ended = true
				return nil
			}
			added = !added
			return nil
		}
		return fn(rr, added)
	})
	if errors.Is(err, ErrNotIncremental) {
		return 0, false, ErrNotIncremental
	}
	if err != nil {
		return 0, false, err
	}
	switch {
	case n == 1 && current.Serial == from:
		return current.Serial, false, nil // up to date
	case n == 1:
		// The SOA alone at another serial: a server that will not tell
		// the difference from one it does not know (older, or ahead).
		return 0, false, ErrNotIncremental
	case !ended:
		return 0, false, fmt.Errorf("dnsclient: IXFR of %s: not closed by the SOA of serial %d", zone, current.Serial)
	}
	soaChanged = !strings.EqualFold(first.Ns, current.Ns) || !strings.EqualFold(first.Mbox, current.Mbox) ||
		first.Refresh != current.Refresh || first.Retry != current.Retry || first.Expire != current.Expire ||
		first.Minttl != current.Minttl || first.Hdr.Ttl != current.Hdr.Ttl
	return current.Serial, soaChanged, nil
}

// transfer runs a zone transfer on its own TCP connection (transfers are
// multi-message and chain their TSIGs, so they never share the kept UPDATE
// connection) and hands each record to fn. It is bounded by ctx, the client
// timeout per message, MaxTransferRecords and MaxTransferBytes.
func (c *Client) transfer(ctx context.Context, zone string, m *dns.Msg, fn func(dns.RR) error) (err error) {
	start := time.Now()
	n, size := 0, 0
	defer func() { c.logExchange(ctx, "dns transfer", zone, n, start, err) }()
	c.sign(m)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.server)
	if err != nil {
		return fmt.Errorf("dnsclient: dial %s: %w", c.server, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	t := &dns.Transfer{
		Conn:         &dns.Conn{Conn: conn},
		ReadTimeout:  c.opts.Timeout,
		WriteTimeout: c.opts.Timeout,
		TsigProvider: c.tsigProvider(),
	}
	env, err := t.In(m, c.server)
	if err != nil {
		return fmt.Errorf("dnsclient: transfer of %s: %w", zone, err)
	}
	// Always drain: miekg/dns' reader goroutine blocks on the channel until
	// it has reported the end or an error; closing the connection makes it
	// finish promptly.
	defer func() {
		_ = conn.Close()
		for range env {
		}
	}()
	for e := range env {
		if e.Error != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("dnsclient: transfer of %s: %w", zone, ctx.Err())
			}
			return transferError(zone, e.Error)
		}
		if n+len(e.RR) > c.opts.MaxTransferRecords {
			return fmt.Errorf("dnsclient: transfer of %s: more than %d records", zone, c.opts.MaxTransferRecords)
		}
		for _, rr := range e.RR {
			n++
			if size += dns.Len(rr); size > c.opts.MaxTransferBytes {
				return fmt.Errorf("dnsclient: transfer of %s: more than %d bytes of records", zone, c.opts.MaxTransferBytes)
			}
			if err := fn(rr); err != nil {
				return err
			}
		}
	}
	return nil
}

// transferError makes the refusals miekg/dns reports as plain errors an
// *RcodeError, so callers tell a refused key or policy from a broken
// network the same way for transfers as for queries and UPDATEs:
//   - "bad xfr rcode: N": the server answered the request with rcode N in a
//     reply that verified (when the client signs);
//   - dns.ErrAuth: the reply did not verify, which is how a server answers a
//     request it could not verify (RFC 8945 §5.2: NOTAUTH with BADKEY,
//     BADSIG or BADTIME, unsigned). Reported as NOTAUTH, not verified.
func transferError(zone string, err error) error {
	var rcode int
	switch {
	case errors.Is(err, dns.ErrAuth):
		return &RcodeError{Op: "transfer", Zone: zone, Rcode: dns.RcodeNotAuth}
	case scanXfrRcode(err.Error(), &rcode):
		// Verified: a signed reply verified before miekg/dns looked at
		// its rcode, and an unsigned request expects no signature.
		return &RcodeError{Op: "transfer", Zone: zone, Rcode: rcode, Verified: true}
	}
	return fmt.Errorf("dnsclient: transfer of %s: %w", zone, err)
}

func scanXfrRcode(msg string, rcode *int) bool {
	n, err := fmt.Sscanf(msg, "dns: bad xfr rcode: %d", rcode)
	return err == nil && n == 1
}
