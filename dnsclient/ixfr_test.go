package dnsclient

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/miekg/dns"
)

// TestIXFRChanges: the changes since a serial come back record by record,
// deletions and additions told apart, across several versions, with the
// serial served now; an unchanged zone is its SOA alone; an SOA whose
// timers changed says so; a serial the journal does not reach is
// ErrNotIncremental, found without reading the zone.
func TestIXFRChanges(t *testing.T) {
	s, k := server(t, false)
	c := client(t, s, k)
	ctx := ctxT(t)
	// named answers with the whole zone when the changes are larger than
	// it (max-ixfr-ratio): a zone of some size first.
	var bulk []Change
	for i := range 200 {
		bulk = append(bulk, Change{Op: Create, Set: a(fmt.Sprintf("h%d.%s", i, zone), 60, "198.18.1.1")})
	}
	if res, err := c.Apply(ctx, zone, bulk); err != nil || res.Err() != nil {
		t.Fatalf("apply: %v %v", err, res.Err())
	}
	from, err := c.Serial(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	collect := func(since uint32) (uint32, bool, []string, error) {
		var got []string
		serial, soaChanged, err := c.IXFRChanges(ctx, zone, since, func(rr dns.RR, added bool) error {
			op := "-"
			if added {
				op = "+"
			}
			got = append(got, op+dns.TypeToString[rr.Header().Rrtype]+" "+rr.Header().Name)
			return nil
		})
		slices.Sort(got)
		return serial, soaChanged, got, err
	}

	serial, soaChanged, got, err := collect(from)
	if err != nil || serial != from || soaChanged || len(got) != 0 {
		t.Fatalf("unchanged zone: serial %d (want %d), soa changed %t, %v, %v", serial, from, soaChanged, got, err)
	}

	if err := c.Update(ctx, zone, Change{Op: Upsert, Set: a("one."+zone, 60, "198.18.0.1")}); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, zone, Change{Op: Upsert, Set: a("one."+zone, 60, "198.18.0.2")},
		Change{Op: Upsert, Set: RRSet{Name: "two." + zone, Type: dns.TypeTXT, TTL: 60, Values: []string{`"x"`}}}); err != nil {
		t.Fatal(err)
	}
	now, err := c.Serial(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	serial, soaChanged, got, err = collect(from)
	want := []string{"+A one." + zone, "+A one." + zone, "+TXT two." + zone, "-A one." + zone}
	if err != nil || serial != now || soaChanged || !slices.Equal(got, want) {
		t.Fatalf("two versions: serial %d (want %d), soa changed %t, %v (want %v), %v", serial, now, soaChanged, got, want, err)
	}

	soa, err := c.SOA(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	soa.Refresh++
	soa.Serial++
	if err := c.SetSOA(ctx, zone, soa); err != nil {
		t.Fatal(err)
	}
	if _, soaChanged, _, err = collect(now); err != nil || !soaChanged {
		t.Fatalf("an SOA edit: soa changed %t, %v", soaChanged, err)
	}

	// A serial the journal does not reach: named answers with the whole
	// zone, which is not read.
	if _, _, _, err := collect(from - 1000); !errors.Is(err, ErrNotIncremental) {
		t.Fatalf("from a serial before the journal: %v, want ErrNotIncremental", err)
	}
	// The callback's error stops the transfer and comes back unchanged.
	errStop := fmt.Errorf("enough")
	if _, _, err := c.IXFRChanges(ctx, zone, from, func(dns.RR, bool) error { return errStop }); !errors.Is(err, errStop) {
		t.Fatalf("a failing callback: %v", err)
	}
}
