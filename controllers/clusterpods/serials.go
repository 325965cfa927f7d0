package clusterpods

import (
	"context"
	"time"

	"github.com/miekg/dns"
	"k8s.io/utils/ptr"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/dnsclient"
)

// Serials never go back (docs/behaviours.md): a primary that comes back
// with an empty volume re-seeds its catalogs and zones at serial 1. named's
// serial-update-method unixtime makes its next UPDATE jump past the old
// serials; what follows covers the rest (no UPDATE comes, or more UPDATEs
// than seconds went by): when a secondary serves a serial newer than the
// primary's, the operator raises the primary's past it. Until then the
// secondaries would neither transfer nor count as in sync.

// SerialNewer reports whether serial a is newer than b in RFC 1982
// arithmetic, as secondaries compare them.
func SerialNewer(a, b uint32) bool {
	return a != b && int32(a-b) > 0 //nolint:gosec // the wrap is the arithmetic RFC 1982 defines
}

// NewestSerial returns the newest of the secondaries' serials when it is
// newer than the primary's.
func NewestSerial(primary uint32, secondaries []uint32) (uint32, bool) {
	newest, ahead := primary, false
	for _, s := range secondaries {
		if SerialNewer(s, newest) {
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

// PrimaryStillBehind reads the primary's serial again, on srv (the server
// RaiseSerial writes to), and tells whether it is still older than past,
// the newest serial a secondary served. It returns the serial it read.
func PrimaryStillBehind(ctx context.Context, srv ZoneServer, zone string, past uint32) (uint32, bool, error) {
	now, err := SOASerial(ctx, srv.Addr, srv.ReadKey(), zone)
	if err != nil {
		return 0, false, err
	}
	return now, SerialNewer(past, now), nil
}

// RaiseSerial sets the SOA serial of zone on srv to past+1 with a signed
// UPDATE when the serial srv serves is still older than past, and returns
// the serial it read and whether it raised it. The secondaries' IXFR from a
// serial the primary's journal does not hold falls back to a full AXFR, so
// none applies the new primary's differences to old data.
func RaiseSerial(ctx context.Context, srv ZoneServer, zone string, past uint32) (uint32, bool, error) {
	var old uint32
	soa, err := EditSOA(ctx, srv, zone, func(soa *dns.SOA) bool {
		old = soa.Serial
		if !SerialNewer(past, soa.Serial) {
			return false
		}
		soa.Serial = past + 1
		return true
	})
	return old, soa != nil, err
}

// EditSOA reads the SOA srv serves for zone (dnsclient.Client.SOA), lets
// edit change it, and when edit reports a change writes it back with an
// UPDATE (dnsclient.Client.SetSOA: named takes it when its serial is
// newer). It returns the SOA as written, nil when edit changed nothing.
// The read is signed as srv says (ReadKey), the UPDATE with srv's key.
func EditSOA(ctx context.Context, srv ZoneServer, zone string, edit func(*dns.SOA) bool) (*dns.SOA, error) {
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

// SOASerial asks one named for a zone's serial over TCP, signed with key
// when there is one (a zone in a view is only reachable with its key).
func SOASerial(ctx context.Context, addr string, key *dnsclient.Key, zone string) (uint32, error) {
	c, err := dnsclient.New(addr, key, dnsclient.Options{Timeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.Serial(ctx, zone)
}

// ServedSerials asks each pod for the zone's serial and returns, per pod,
// the serial it serves: nil when it does not answer for the zone. InSync
// is the caller's to set. ctx bounds all the queries.
func ServedSerials(ctx context.Context, pods []PodEndpoint, key *dnsclient.Key, zone string) []bindv1alpha1.SecondaryZoneStatus {
	out := make([]bindv1alpha1.SecondaryZoneStatus, 0, len(pods))
	for _, p := range pods {
		st := bindv1alpha1.SecondaryZoneStatus{Pod: p.Pod}
		if serial, err := SOASerial(ctx, p.DNSAddr, key, zone); err == nil {
			st.Serial = ptr.To(int64(serial))
		}
		out = append(out, st)
	}
	return out
}
