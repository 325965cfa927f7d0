package dnsclient

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// DefaultMaxTransferRecords bounds an AXFR/IXFR so a hostile or runaway
// server cannot make the client hold an unbounded zone in memory.
const DefaultMaxTransferRecords = 2_000_000

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
// of a signed transfer is verified.
func (c *Client) AXFR(ctx context.Context, zone string) ([]dns.RR, error) {
	zone = dns.Fqdn(strings.ToLower(zone))
	m := new(dns.Msg)
	m.SetAxfr(zone)
	rrs, err := c.transfer(ctx, zone, m)
	if err != nil {
		return nil, err
	}
	return checkTransfer(zone, rrs)
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
	rrs, err := c.transfer(ctx, zone, m)
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

// transfer runs a zone transfer on its own TCP connection (transfers are
// multi-message and chain their TSIGs, so they never share the kept UPDATE
// connection), bounded by ctx, the client timeout per message and
// MaxTransferRecords.
func (c *Client) transfer(ctx context.Context, zone string, m *dns.Msg) (_ []dns.RR, err error) {
	start := time.Now()
	var rrs []dns.RR
	defer func() { c.logExchange(ctx, "dns transfer", zone, len(rrs), start, err) }()
	c.sign(m)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.server)
	if err != nil {
		return nil, fmt.Errorf("dnsclient: dial %s: %w", c.server, err)
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
		return nil, fmt.Errorf("dnsclient: transfer of %s: %w", zone, err)
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
				return nil, fmt.Errorf("dnsclient: transfer of %s: %w", zone, ctx.Err())
			}
			return nil, fmt.Errorf("dnsclient: transfer of %s: %w", zone, e.Error)
		}
		if len(rrs)+len(e.RR) > c.opts.MaxTransferRecords {
			return nil, fmt.Errorf("dnsclient: transfer of %s: more than %d records", zone, c.opts.MaxTransferRecords)
		}
		rrs = append(rrs, e.RR...)
	}
	return rrs, nil
}
