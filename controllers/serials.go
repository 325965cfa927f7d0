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
	soa, err := servedSOA(ctx, srv.Addr, zone)
	if err != nil {
		return 0, err
	}
	old := soa.Serial
	soa.Serial = past + 1
	return old, setSOA(ctx, srv, zone, soa)
}

// servedSOA is the SOA record addr serves for zone.
func servedSOA(ctx context.Context, addr, zone string) (*dns.SOA, error) {
	apex := records.ZoneFQDN(zone)
	vals, ttl, err := servedValues(ctx, addr, apex, dns.TypeSOA)
	if err != nil {
		return nil, err
	}
	if len(vals) != 1 {
		return nil, fmt.Errorf("%s serves %d SOA records for %s", addr, len(vals), zone)
	}
	rr, err := dns.NewRR(fmt.Sprintf("%s %d IN SOA %s", apex, ttl, vals[0]))
	if err != nil {
		return nil, fmt.Errorf("the SOA %s serves for %s does not parse: %w", addr, zone, err)
	}
	soa, ok := rr.(*dns.SOA)
	if !ok {
		return nil, fmt.Errorf("the SOA %s serves for %s does not parse", addr, zone)
	}
	return soa, nil
}

// setSOA replaces the zone's SOA on srv (signed UPDATE): named takes it
// when its serial is newer.
func setSOA(ctx context.Context, srv ZoneServer, zone string, soa *dns.SOA) error {
	c, err := dnsclient.New(srv.Addr, &srv.Key, dnsclient.Options{Timeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	return c.SetSOA(ctx, zone, soa)
}
