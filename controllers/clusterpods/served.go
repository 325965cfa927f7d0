package clusterpods

import (
	"context"
	"slices"
	"time"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/records"
)

// ServedValues asks the zone's primary, over TCP, for one record set and
// returns its canonical rdata, sorted. It tells a record set this operator
// already wrote (a retry after a lost reply, or a stale cache) from someone
// else's.
func ServedValues(ctx context.Context, srv ZoneServer, fqdn string, rrtype uint16) ([]string, uint32, error) {
	rrs, err := ServedRRs(ctx, srv.Addr, srv.ReadKey(), fqdn, rrtype)
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

// ServedRRs asks addr, over TCP, for one record set, signed with key when
// there is one (a zone in a view is only reachable with the view's key).
func ServedRRs(ctx context.Context, addr string, key *dnsclient.Key, fqdn string, rrtype uint16) ([]dns.RR, error) {
	c, err := dnsclient.New(addr, key, dnsclient.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Query(ctx, fqdn, rrtype)
}
