// Package bench measures the operator's data plane against real named on
// loopback and prints a table (make bench).
package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

const records = 10000

func startZone(b *testing.B) (*bindtest.Server, bindtest.Key) {
	key := bindtest.NewKey("upd", "hmac-sha256")
	srv := bindtest.Start(b, bindtest.Options{
		Tmpfs:  true,
		Keys:   []bindtest.Key{key},
		Files:  map[string]string{"bench.test.db": bindtest.SeedZone("bench.test.", 1)},
		Config: `zone "bench.test" { type primary; file "bench.test.db"; allow-update { key "upd"; }; };`,
	})
	return srv, key
}

func rrset(i int) dnsclient.RRSet {
	return dnsclient.RRSet{Name: fmt.Sprintf("h%d.bench.test.", i), Type: dns.TypeA, TTL: 300,
		Values: []string{fmt.Sprintf("198.18.%d.%d", (i/250)%256, i%250+1)}}
}

// raw sends the records with a minimal miekg/dns client: one signed UPDATE
// of 500 records per message over TCP (the optimum in docs/bind-facts.md,
// "Measured limits"), no guards.
func raw(b *testing.B, addr string, key bindtest.Key) time.Duration {
	c := &dns.Client{Net: "tcp", Timeout: 30 * time.Second, TsigSecret: map[string]string{key.Name + ".": key.Secret}}
	start := time.Now()
	for i := 0; i < records; i += 500 {
		m := new(dns.Msg)
		m.SetUpdate("bench.test.")
		var rrs []dns.RR
		for j := i; j < i+500 && j < records; j++ {
			s := rrset(j)
			rr, _ := dns.NewRR(fmt.Sprintf("%s %d IN A %s", s.Name, s.TTL, s.Values[0]))
			rrs = append(rrs, rr)
		}
		m.Insert(rrs)
		m.SetTsig(key.Name+".", dns.HmacSHA256, 300, time.Now().Unix())
		r, _, err := c.Exchange(m, addr)
		if err != nil || r.Rcode != dns.RcodeSuccess {
			b.Fatalf("raw update: %v %v", err, r)
		}
	}
	return time.Since(start)
}

// operator sends the records the way the DNSRecord controller does: 64
// concurrent reconciles each submitting one guarded change (Create: "RRset
// does not exist") to the shared batcher, which merges them into UPDATEs.
func operator(b *testing.B, addr string, key bindtest.Key, workers int) time.Duration {
	k, err := dnsclient.NewKey(key.Name, key.Algorithm, key.Secret)
	if err != nil {
		b.Fatal(err)
	}
	u := batch.NewUpdates(0, 0)
	srv := batch.Server{Addr: addr, Key: k}
	work := make(chan int)
	var wg sync.WaitGroup
	var failed sync.Map
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if errs := u.SubmitMany(context.Background(), srv, "bench.test", []dnsclient.Change{{Op: dnsclient.Create, Set: rrset(i)}}); errs[0] != nil {
					failed.Store(i, errs[0])
				}
			}
		}()
	}
	deadline := time.After(2 * time.Minute)
	for i := 0; i < records; i++ {
		select {
		case work <- i:
		case <-deadline:
			b.Fatal("operator path did not finish within 2 minutes")
		}
	}
	close(work)
	wg.Wait()
	d := time.Since(start)
	failed.Range(func(k, v any) bool { b.Fatalf("record %v: %v", k, v); return false })
	return d
}

func BenchmarkRecords10k(b *testing.B) {
	var rawD time.Duration
	workers := []int{64, 512}
	opD := make([]time.Duration, len(workers))
	for i := 0; i < b.N; i++ {
		s1, k1 := startZone(b)
		rawD += raw(b, s1.DNSAddr, k1)
		s1.Stop()
		for j, w := range workers {
			s2, k2 := startZone(b)
			opD[j] += operator(b, s2.DNSAddr, k2, w)
			s2.Stop()
		}
	}
	rawRate := float64(records*b.N) / rawD.Seconds()
	b.ReportMetric(rawRate, "raw-rec/s")
	fmt.Fprintf(os.Stdout, "\n| path (10,000 A records, tmpfs, loopback) | records/s | time | vs raw (target ≥ 70%%) |\n|---|---|---|---|\n")
	fmt.Fprintf(os.Stdout, "| raw miekg/dns, 500/UPDATE, TCP | %.0f | %v | 100%% |\n", rawRate, (rawD / time.Duration(b.N)).Round(time.Millisecond))
	for j, w := range workers {
		opRate := float64(records*b.N) / opD[j].Seconds()
		b.ReportMetric(opRate, fmt.Sprintf("op%d-rec/s", w))
		fmt.Fprintf(os.Stdout, "| operator batcher, %d concurrent reconciles, guarded Create | %.0f | %v | %.0f%% |\n", w, opRate, (opD[j] / time.Duration(b.N)).Round(time.Millisecond), 100*opRate/rawRate)
	}
	fmt.Fprintln(os.Stdout)
}
