package zones

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// BenchmarkDriftCheck (issue 47 item 5): the bytes a periodic drift check
// of a 100,000-record zone moves between the operator and the primary,
// counted on the wire by a TCP relay in front of named: the full check (an
// AXFR, what every check cost before, the baseline), an unchanged zone (one
// SOA query) and a zone with one change to a name the BindZone does not
// check (SOA query, then IXFR from the serial last checked). of-axfr is
// each one's share of the baseline's bytes, measured in the same run.
//
//	go test -run '^$' -bench BenchmarkDriftCheck ./controllers/zones/
func BenchmarkDriftCheck(b *testing.B) {
	const zone, records = "drift.test", 100000
	var zf strings.Builder
	zf.WriteString(bindtest.SeedZone(zone, 1))
	for i := range records - 3 {
		fmt.Fprintf(&zf, "h%06d IN A 198.18.%d.%d\n", i, i/250%250, i%250+1)
	}
	xfr := bindtest.NewKey("xfr", "hmac-sha256")
	srv := bindtest.Start(b, bindtest.Options{
		Keys:   []bindtest.Key{xfr},
		Files:  map[string]string{"drift.db": zf.String()},
		Config: `zone "drift.test" { type primary; file "drift.db"; allow-transfer { key "xfr"; }; allow-update { key "xfr"; }; };`,
	})
	key, err := dnsclient.NewKey(xfr.Name, xfr.Algorithm, xfr.Secret)
	if err != nil {
		b.Fatal(err)
	}
	relay := startCountingRelay(b, srv.DNSAddr)
	ctx := context.Background()
	r := &BindZoneReconciler{}
	t := &zoneTarget{zoneName: zone, srv: clusterpods.ZoneServer{Addr: relay.addr, Key: key}}
	z := &bindv1alpha1.BindZone{Spec: bindv1alpha1.BindZoneSpec{Records: []bindv1alpha1.RecordSet{{Name: "www", Type: "A", Values: []string{"198.18.255.1"}}}}}
	z.UID = "bench"
	st := &bindv1alpha1.BindZoneStatus{}
	upd, err := dnsclient.New(srv.DNSAddr, &key, dnsclient.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer upd.Close()

	perCheck := map[string]float64{}
	run := func(name string, prepare func(i int), check func() error) {
		b.Run(name, func(b *testing.B) {
			var moved int64
			for i := range b.N {
				prepare(i)
				before := relay.bytes.Load()
				if err := check(); err != nil {
					b.Fatal(err)
				}
				moved += relay.bytes.Load() - before
			}
			perCheck[name] = float64(moved) / float64(b.N)
			b.ReportMetric(perCheck[name], "B/check")
			if base := perCheck["full-axfr"]; base > 0 {
				b.ReportMetric(perCheck[name]/base, "of-axfr")
			}
		})
	}
	run("full-axfr", func(int) {}, func() error {
		_, serial, err := r.served(ctx, t, func(k setKey) bool { return k.name == "www" })
		r.checkedSerials.Store(z.UID, serial)
		return err
	})
	run("unchanged-soa", func(int) {}, func() error {
		if !r.untouchedSinceCheck(ctx, z, t, st) {
			return fmt.Errorf("an unchanged zone was not found untouched")
		}
		return nil
	})
	run("one-change-ixfr", func(i int) {
		if err := upd.Update(ctx, zone, dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{
			Name: fmt.Sprintf("other%d.%s.", i, zone), Type: dns.TypeA, TTL: 60, Values: []string{"198.18.254.1"},
		}}); err != nil {
			b.Fatal(err)
		}
	}, func() error {
		if !r.untouchedSinceCheck(ctx, z, t, st) {
			return fmt.Errorf("a change to an unchecked name cost a full check")
		}
		return nil
	})
}

// countingRelay forwards TCP connections to a server and counts the bytes
// it carries both ways.
type countingRelay struct {
	addr  string
	bytes atomic.Int64
}

func startCountingRelay(tb testing.TB, upstream string) *countingRelay {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	r := &countingRelay{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	tb.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { r.serve(c, upstream) })
		}
	})
	return r
}

func (r *countingRelay) serve(c net.Conn, upstream string) {
	defer c.Close()
	u, err := net.DialTimeout("tcp", upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		// Counted before it is passed on: a reply is counted before the
		// client can have read it.
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				r.bytes.Add(int64(n))
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		// Either side closing ends both.
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
	<-done
}
