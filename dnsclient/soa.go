package dnsclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// SetSOA replaces the SOA of zone with soa in one signed UPDATE. named
// takes it only when its serial is newer than the one it serves (RFC 2136
// 3.4.2.2), so this is how a caller moves a serial forward; Change refuses
// SOA on purpose, so that record-set edits never touch it.
func (c *Client) SetSOA(ctx context.Context, zone string, soa *dns.SOA) error {
	zone = dns.Fqdn(strings.ToLower(zone))
	if soa == nil || !strings.EqualFold(dns.Fqdn(soa.Hdr.Name), zone) {
		return fmt.Errorf("%v: the SOA to set must be the one of %s", c, zone)
	}
	rr := dns.Copy(soa).(*dns.SOA)
	rr.Hdr.Name, rr.Hdr.Rrtype, rr.Hdr.Class = zone, dns.TypeSOA, dns.ClassINET
	m := new(dns.Msg)
	m.SetUpdate(zone)
	m.Insert([]dns.RR{rr})
	start := time.Now()
	r, authErr, err := c.exchange(ctx, m)
	if err == nil {
		err = checkReply("update", zone, r, authErr)
	}
	c.logExchange(ctx, "dns update", zone, 1, start, err)
	return err
}
