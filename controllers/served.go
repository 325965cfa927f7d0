package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/records"
)

// servedValues asks the zone's primary, over TCP, for one record set and
// returns its canonical rdata, sorted. It tells a record set this operator
// already wrote (a retry after a lost reply, or a stale cache) from someone
// else's.
func servedValues(ctx context.Context, addr, fqdn string, rrtype uint16) ([]string, uint32, error) {
	rrs, err := servedRRs(ctx, addr, fqdn, rrtype)
	if err != nil {
		return nil, 0, err
	}
	values := make([]string, 0, len(rrs))
	var ttl uint32
	for _, rr := range rrs {
		values = append(values, records.Rdata(rr))
		ttl = rr.Header().Ttl
	}
	slices.Sort(values)
	return values, ttl, nil
}

// servedRRs asks addr, over TCP, for one record set. The reply is
// untrusted: only answers of the asked name and type count.
func servedRRs(ctx context.Context, addr, fqdn string, rrtype uint16) ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(fqdn), rrtype)
	m.RecursionDesired = false
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	if deadline, ok := ctx.Deadline(); ok {
		c.Timeout = time.Until(deadline)
	}
	in, _, err := c.ExchangeContext(ctx, m, addr)
	if err != nil {
		return nil, err
	}
	if in.Rcode != dns.RcodeSuccess && in.Rcode != dns.RcodeNameError {
		return nil, fmt.Errorf("query %s %s: %s", fqdn, dns.TypeToString[rrtype], dns.RcodeToString[in.Rcode])
	}
	var rrs []dns.RR
	for _, rr := range in.Answer {
		h := rr.Header()
		if h.Rrtype != rrtype || !dns.IsSubDomain(h.Name, dns.Fqdn(fqdn)) || !dns.IsSubDomain(dns.Fqdn(fqdn), h.Name) {
			continue
		}
		rrs = append(rrs, rr)
	}
	return rrs, nil
}
