package dnsclient

import (
	"context"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Query asks for one record set, non-recursively, and returns the answer's
// records of that name and type (none for NXDOMAIN or NODATA). Signed when
// the client has a key: with views, the key is what picks the view. The
// reply is untrusted, so records of other names or types are dropped, and a
// signed query's reply must verify.
func (c *Client) Query(ctx context.Context, name string, rrtype uint16) ([]dns.RR, error) {
	name = dns.Fqdn(strings.ToLower(name))
	m := new(dns.Msg)
	m.SetQuestion(name, rrtype)
	m.RecursionDesired = false
	start := time.Now()
	rrs, err := c.query(ctx, m)
	c.logExchange(ctx, "dns query", name, len(rrs), start, err)
	return rrs, err
}

func (c *Client) query(ctx context.Context, m *dns.Msg) ([]dns.RR, error) {
	q := m.Question[0]
	r, authErr, err := c.exchange(ctx, m)
	if err != nil {
		return nil, err
	}
	if r.Rcode == dns.RcodeNameError && authErr == nil {
		return nil, nil
	}
	if err := checkReply("query", q.Name, r, authErr); err != nil {
		return nil, err
	}
	var rrs []dns.RR
	for _, rr := range r.Answer {
		h := rr.Header()
		if h.Rrtype == q.Qtype && strings.EqualFold(dns.Fqdn(h.Name), q.Name) {
			rrs = append(rrs, rr)
		}
	}
	return rrs, nil
}
