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

// The looks read the primary's serial before the secondaries'. While
// UPDATEs stream in, a secondary read a moment later may already serve a
// newer serial it transferred from the primary in between: no lost data.
// Read after the secondaries, a primary serves at least what they
// transferred from it, unless it lost its data; so both checks below read
// it again (docs/behaviours.md, "Serials never go back").

// primaryStillBehind reads the primary's serial again, on srv (the server
// raiseSerial writes to), and tells whether it is still older than past,
// the newest serial a secondary served. It returns the serial it read.
func primaryStillBehind(ctx context.Context, srv ZoneServer, zone string, past uint32) (uint32, bool, error) {
	now, err := soaSerial(ctx, srv.Addr, srv.ReadKey(), zone)
	if err != nil {
		return 0, false, err
	}
	return now, serialNewer(past, now), nil
}

// raiseSerial sets the SOA serial of zone on srv to past+1 with a signed
// UPDATE when the serial srv serves is still older than past, and returns
// the serial it read and whether it raised it. The secondaries' IXFR from a
// serial the primary's journal does not hold falls back to a full AXFR, so
// none applies the new primary's differences to old data.
func raiseSerial(ctx context.Context, srv ZoneServer, zone string, past uint32) (uint32, bool, error) {
	var old uint32
	soa, err := editSOA(ctx, srv, zone, func(soa *dns.SOA) bool {
		old = soa.Serial
		if !serialNewer(past, soa.Serial) {
			return false
		}
		soa.Serial = past + 1
		return true
	})
	return old, soa != nil, err
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
