package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/records"
)

// Serials never go back (docs/behaviours.md): a primary that comes back
// with an empty volume re-seeds its catalogs and zones at serial 1. named's
// serial-update-method unixtime makes its next UPDATE jump past the old
// serials; what follows covers the rest (no UPDATE comes, or more UPDATEs
// than seconds went by): when a secondary serves a serial newer than the
// primary's, the operator raises the primary's past it. Until then the
// secondaries would neither transfer nor count as in sync.

// serialNewer reports whether serial a is newer than b in RFC 1982
// arithmetic, as secondaries compare them.
func serialNewer(a, b uint32) bool {
	return a != b && int32(a-b) > 0 //nolint:gosec // the wrap is the arithmetic RFC 1982 defines
}

// newestSerial returns the newest of the secondaries' serials when it is
// newer than the primary's.
func newestSerial(primary uint32, secondaries []uint32) (uint32, bool) {
	newest, ahead := primary, false
	for _, s := range secondaries {
		if serialNewer(s, newest) {
			newest, ahead = s, true
		}
	}
	return newest, ahead
}

// raiseSerial sets the SOA serial of zone on srv to past+1 with a signed
// UPDATE and returns the serial it replaced. The secondaries'
// IXFR from a serial the primary's journal does not hold falls back to a
// full AXFR, so none applies the new primary's differences to old data.
func raiseSerial(ctx context.Context, srv ZoneServer, zone string, past uint32) (uint32, error) {
	apex := records.ZoneFQDN(zone)
	vals, ttl, err := servedValues(ctx, srv.Addr, apex, dns.TypeSOA)
	if err != nil {
		return 0, err
	}
	if len(vals) != 1 {
		return 0, fmt.Errorf("the primary serves %d SOA records for %s", len(vals), zone)
	}
	rr, err := dns.NewRR(fmt.Sprintf("%s %d IN SOA %s", apex, ttl, vals[0]))
	if err != nil {
		return 0, fmt.Errorf("the primary's SOA for %s does not parse: %w", zone, err)
	}
	soa, ok := rr.(*dns.SOA)
	if !ok {
		return 0, fmt.Errorf("the primary's SOA for %s does not parse", zone)
	}
	old := soa.Serial
	soa.Serial = past + 1
	c, err := dnsclient.New(srv.Addr, &srv.Key, dnsclient.Options{Timeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return old, c.SetSOA(ctx, zone, soa)
}
