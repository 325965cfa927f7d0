package dnsclient

import (
	"context"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// Notify sends a NOTIFY for zone (RFC 1996) to the server, TSIG-signed when
// the client has a key, and checks the reply. A secondary that lists the
// key in allow-notify accepts it from any address; one that does not
// answers REFUSED (*RcodeError), and a wrong key NOTAUTH.
func (c *Client) Notify(ctx context.Context, zone string) error {
	zone = dns.Fqdn(strings.ToLower(zone))
	m := new(dns.Msg)
	m.SetNotify(zone)
	start := time.Now()
	r, authErr, err := c.exchange(ctx, m)
	if err == nil {
		err = checkReply("notify", zone, r, authErr)
	}
	c.logExchange(ctx, "dns notify", zone, 0, start, err)
	return err
}
