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
	r, authErr, err := c.exchange(ctx, m)
	if err == nil && r.Rcode == dns.RcodeNameError && authErr == nil {
		c.logExchange(ctx, "dns query", name, 0, start, nil)
		return nil, nil
	}
	if err == nil {
		err = checkReply("query", name, r, authErr)
	}
	c.logExchange(ctx, "dns query", name, 1, start, err)
	if err != nil {
		return nil, err
	}
	var rrs []dns.RR
	for _, rr := range r.Answer {
		h := rr.Header()
		if h.Rrtype == rrtype && strings.EqualFold(dns.Fqdn(h.Name), name) {
			rrs = append(rrs, rr)
		}
	}
	return rrs, nil
}
