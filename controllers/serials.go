package controllers

import (
	"context"
	"time"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/dnsclient"
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

// primaryStillBehind reads the primary's serial again and tells whether
// it is still older than past, the newest serial a secondary served. The
// primary is read before the secondaries: while UPDATEs stream in, a
// secondary read a moment later may already have transferred a newer
// serial from it, which is no sign of lost data (10,000 zones created in
// one catalog raised its serial 19 times for nothing, each logged as "the
// primary lost its data?"). Read after the secondaries, a primary serves
// at least what they transferred from it, unless it lost its data.
func primaryStillBehind(ctx context.Context, srv ZoneServer, zone string, past uint32) (bool, error) {
	now, err := soaSerial(ctx, srv.Addr, srv.ReadKey(), zone)
	if err != nil {
		return false, err
	}
	return serialNewer(past, now), nil
}

// raiseSerial sets the SOA serial of zone on srv to past+1 with a signed
// UPDATE and returns the serial it replaced. The secondaries' IXFR from a
// serial the primary's journal does not hold falls back to a full AXFR, so
// none applies the new primary's differences to old data.
func raiseSerial(ctx context.Context, srv ZoneServer, zone string, past uint32) (uint32, error) {
	var old uint32
	_, err := editSOA(ctx, srv, zone, func(soa *dns.SOA) bool {
		old, soa.Serial = soa.Serial, past+1
		return true
	})
	return old, err
}

// editSOA reads the SOA srv serves for zone (dnsclient.Client.SOA), lets
// edit change it, and when edit reports a change writes it back with an
// UPDATE (dnsclient.Client.SetSOA: named takes it when its serial is
// newer). It returns the SOA as written, nil when edit changed nothing.
// The read is signed as srv says (ReadKey), the UPDATE with srv's key.
func editSOA(ctx context.Context, srv ZoneServer, zone string, edit func(*dns.SOA) bool) (*dns.SOA, error) {
	reader, err := dnsclient.New(srv.Addr, srv.ReadKey(), dnsclient.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	soa, err := reader.SOA(ctx, zone)
	_ = reader.Close()
	if err != nil {
		return nil, err
	}
	if !edit(soa) {
		return nil, nil
	}
	writer, err := dnsclient.New(srv.Addr, &srv.Key, dnsclient.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	defer writer.Close()
	return soa, writer.SetSOA(ctx, zone, soa)
}
