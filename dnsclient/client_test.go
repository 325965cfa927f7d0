package dnsclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"github.com/miekg/dns"
)

const zone = "dyn.test."

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// server starts named with zone dyn.test, updatable and transferable only
// with the returned key.
func server(t testing.TB, tmpfs bool) (*bindtest.Server, bindtest.Key) {
	t.Helper()
	k := bindtest.NewKey("update-key", "hmac-sha256")
	s := bindtest.Start(t, bindtest.Options{
		Keys:  []bindtest.Key{k},
		Tmpfs: tmpfs,
		Files: map[string]string{"dyn.test.db": bindtest.SeedZone(zone, 1)},
		Config: `zone "dyn.test" {
	type primary;
	file "dyn.test.db";
	allow-update { key "update-key"; };
	allow-transfer { key "update-key"; };
};`,
	})
	return s, k
}

func client(t testing.TB, s *bindtest.Server, k bindtest.Key) *Client {
	t.Helper()
	key, err := NewKey(k.Name, k.Algorithm, k.Secret)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(s.DNSAddr, &key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lookup asks named with a plain query, independent of the client.
func lookup(t testing.TB, addr, name string, typ uint16) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), typ)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	var out []string
	for _, rr := range r.Answer {
		if rr.Header().Rrtype == typ {
			out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
	}
	return out
}

func a(name string, ttl uint32, ips ...string) RRSet {
	return RRSet{Name: name, Type: dns.TypeA, TTL: ttl, Values: ips}
}

func wantRcode(t *testing.T, err error, rcode int) *RcodeError {
	t.Helper()
	var re *RcodeError
	if !errors.As(err, &re) || re.Rcode != rcode {
		t.Fatalf("got %v, want rcode %s", err, dns.RcodeToString[rcode])
	}
	if !strings.Contains(err.Error(), dns.RcodeToString[rcode]) {
		t.Fatalf("error %q does not name the rcode", err)
	}
	return re
}

// A signed update is applied and served; the prerequisites guard Create,
// Replace and Delete; many signed messages in a row on one connection all
// verify (the BADSIG trap: docs/bind-facts.md, "DNS client facts").
func TestUpdateAppliedAndGuarded(t *testing.T) {
	s, k := server(t, false)
	c := client(t, s, k)
	ctx := ctxT(t)

	if err := c.Update(ctx, zone, Change{Op: Create, Set: a("www", 60, "198.18.0.1", "198.18.0.2")}); err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, s.DNSAddr, "www."+zone, dns.TypeA); len(got) != 2 {
		t.Fatalf("served %v", got)
	}
	// Create again: the RRset exists → YXRRSET, nothing changed.
	err := c.Update(ctx, zone, Change{Op: Create, Set: a("www", 60, "198.18.0.9")})
	if re := wantRcode(t, err, dns.RcodeYXRrset); !re.Verified {
		t.Fatal("refusal from named with our key should be signed")
	}
	// Replace with a stale Prev → NXRRSET; with the right Prev → applied.
	err = c.Update(ctx, zone, Change{Op: Replace, Set: a("www", 60, "198.18.0.3"), Prev: []string{"198.18.0.1"}})
	wantRcode(t, err, dns.RcodeNXRrset)
	if err := c.Update(ctx, zone, Change{Op: Replace, Set: a("www", 60, "198.18.0.3"), Prev: []string{"198.18.0.2", "198.18.0.1"}}); err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, s.DNSAddr, "www."+zone, dns.TypeA); len(got) != 1 || !strings.Contains(got[0], "198.18.0.3") {
		t.Fatalf("after replace: %v", got)
	}
	// Upsert overwrites whatever is there.
	if err := c.Update(ctx, zone, Change{Op: Upsert, Set: a("www", 60, "198.18.0.4")}); err != nil {
		t.Fatal(err)
	}
	// Guarded delete with a stale Prev fails; with the right one succeeds.
	wantRcode(t, c.Update(ctx, zone, Change{Op: Delete, Set: a("www", 0), Prev: []string{"198.18.0.3"}}), dns.RcodeNXRrset)
	if err := c.Update(ctx, zone, Change{Op: Delete, Set: a("www", 0), Prev: []string{"198.18.0.4"}}); err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, s.DNSAddr, "www."+zone, dns.TypeA); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
	// A name outside the zone never leaves the client.
	if err := c.Update(ctx, zone, Change{Op: Upsert, Set: a("www.example.org.", 60, "198.18.0.1")}); err == nil {
		t.Fatal("out-of-zone name accepted")
	}

	// 30 signed UPDATEs back to back on the kept connection.
	for i := 0; i < 30; i++ {
		if err := c.Update(ctx, zone, Change{Op: Upsert, Set: a(fmt.Sprintf("seq%d", i), 60, "198.18.1.1")}); err != nil {
			t.Fatalf("message %d on one connection: %v", i, err)
		}
	}
	if got := lookup(t, s.DNSAddr, "seq29."+zone, dns.TypeA); len(got) != 1 {
		t.Fatalf("seq29: %v", got)
	}
}

// A wrong secret gets NOTAUTH with TSIG BADSIG; an unknown key BADKEY.
func TestWrongKey(t *testing.T) {
	s, k := server(t, false)
	for _, tc := range []struct {
		key  bindtest.Key
		tsig int
	}{
		{bindtest.NewKey(k.Name, k.Algorithm), dns.RcodeBadSig},
		{bindtest.NewKey("other-key", k.Algorithm), dns.RcodeBadKey},
	} {
		c := client(t, s, tc.key)
		err := c.Update(ctxT(t), zone, Change{Op: Upsert, Set: a("bad", 60, "198.18.0.1")})
		re := wantRcode(t, err, dns.RcodeNotAuth)
		if int(re.TSIGError) != tc.tsig || re.Verified {
			t.Fatalf("got %v (tsig %d verified %v), want TSIG %d unverified", err, re.TSIGError, re.Verified, tc.tsig)
		}
		if !strings.Contains(err.Error(), tsigErrorName(uint16(tc.tsig))) {
			t.Fatalf("error %q does not name the TSIG error", err)
		}
		// An unsigned client has no business updating either.
		if got := lookup(t, s.DNSAddr, "bad."+zone, dns.TypeA); len(got) != 0 {
			t.Fatalf("wrongly signed update applied: %v", got)
		}
	}
}

// 1,000 records, AXFR returns what was written, the serial increases.
func TestBatchTransferSerial(t *testing.T) {
	s, k := server(t, false)
	c := client(t, s, k)
	ctx := ctxT(t)
	before, err := c.Serial(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	changes := make([]Change, 1000)
	for i := range changes {
		changes[i] = Change{Op: Create, Set: a(fmt.Sprintf("h%04d", i), 120, fmt.Sprintf("198.18.%d.%d", i/256, i%256))}
	}
	c.opts.BatchSize = 1000
	res, err := c.Apply(ctx, zone, changes)
	if err != nil || res.Err() != nil || res.Applied != 1000 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if res.Messages != 1 {
		t.Fatalf("sent %d messages, want 1", res.Messages)
	}
	after, err := c.Serial(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	if !serialGreater(after, before) {
		t.Fatalf("serial %d → %d did not increase", before, after)
	}
	rrs, err := c.AXFR(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rr := range rrs {
		if ar, ok := rr.(*dns.A); ok {
			got[ar.Hdr.Name] = ar.A.String()
		}
	}
	for i := range changes {
		name := fmt.Sprintf("h%04d.%s", i, zone)
		if want := fmt.Sprintf("198.18.%d.%d", i/256, i%256); got[name] != want {
			t.Fatalf("AXFR %s = %q, want %q", name, got[name], want)
		}
	}
	if soa, ok := rrs[0].(*dns.SOA); !ok || soa.Serial != after {
		t.Fatalf("AXFR SOA %v, serial want %d", rrs[0], after)
	}
	// AXFREach streams the same records and the serial; an error from the
	// callback stops the transfer and comes back unchanged.
	streamed := 0
	serial, err := c.AXFREach(ctx, zone, func(rr dns.RR) error {
		if rr.String() != rrs[streamed].String() {
			return fmt.Errorf("record %d: %v, AXFR had %v", streamed, rr, rrs[streamed])
		}
		streamed++
		return nil
	})
	if err != nil || serial != after || streamed != len(rrs) {
		t.Fatalf("AXFREach: %d records at serial %d (%v), want %d at %d", streamed, serial, err, len(rrs), after)
	}
	errStop := errors.New("enough")
	if _, err := c.AXFREach(ctx, zone, func(dns.RR) error { return errStop }); !errors.Is(err, errStop) {
		t.Fatalf("AXFREach with a failing callback: %v, want %v", err, errStop)
	}
	// IXFR from the first serial returns a difference sequence.
	ix, err := c.IXFR(ctx, zone, before)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix) < 4 {
		t.Fatalf("IXFR: %d records", len(ix))
	}
}

func serialGreater(a, b uint32) bool { return a != b && a-b < 1<<31 } // RFC 1982

// A transfer is bounded by the records' count and by their wire size:
// network input, even from our own primary, is. A zone of 100 records of
// 1,000-byte TXT rdata passes within both bounds, and fails with each one
// set just below what the zone holds, the error naming the bound.
func TestTransferBounds(t *testing.T) {
	s, k := server(t, false)
	c := client(t, s, k)
	ctx := ctxT(t)
	changes := make([]Change, 100)
	long := strings.Repeat("x", 250)
	for i := range changes {
		changes[i] = Change{Op: Create, Set: RRSet{Name: fmt.Sprintf("t%03d", i), Type: dns.TypeTXT, TTL: 60,
			Values: []string{fmt.Sprintf("%q %q %q %q", long, long, long, long)}}}
	}
	c.opts.BatchSize = 100
	if res, err := c.Apply(ctx, zone, changes); err != nil || res.Err() != nil {
		t.Fatalf("apply: %+v %v", res, err)
	}
	rrs, err := c.AXFR(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, rr := range rrs {
		size += dns.Len(rr)
	}
	if size < 100_000 {
		t.Fatalf("the zone holds %d bytes of records, want over 100,000", size)
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{MaxTransferRecords: len(rrs) - 1}, fmt.Sprintf("more than %d records", len(rrs)-1)},
		{Options{MaxTransferBytes: size - 1}, fmt.Sprintf("more than %d bytes of records", size-1)},
	} {
		bounded, err := New(s.DNSAddr, c.key, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bounded.AXFR(ctx, zone); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AXFR with %+v: %v, want an error saying %q", tc.opts, err, tc.want)
		}
		bounded.Close()
	}
}

// A batch with a few bad sets: the good ones apply, the bad ones come back
// by index with their rcode, and bisection needs far fewer messages than
// one per set.
func TestBatchIsolatesFailures(t *testing.T) {
	s, k := server(t, false)
	c := client(t, s, k)
	ctx := ctxT(t)
	if err := c.Update(ctx, zone, Change{Op: Upsert, Set: a("taken", 60, "198.18.0.1")}); err != nil {
		t.Fatal(err)
	}
	changes := make([]Change, 200)
	for i := range changes {
		changes[i] = Change{Op: Create, Set: a(fmt.Sprintf("n%03d", i), 60, "198.18.2.1")}
	}
	changes[17] = Change{Op: Create, Set: a("taken", 60, "198.18.0.2")}                                         // YXRRSET
	changes[120] = Change{Op: Replace, Set: a("n999", 60, "198.18.0.2"), Prev: []string{"198.18.0.7"}}          // NXRRSET
	changes[150] = Change{Op: Create, Set: RRSet{Name: "bad", Type: dns.TypeA, TTL: 60, Values: []string{"x"}}} // invalid
	res, err := c.Apply(ctx, zone, changes)
	if err != nil {
		t.Fatalf("fatal error: %v", err)
	}
	if res.Applied != 197 || len(res.Failed) != 3 {
		t.Fatalf("applied %d failed %v", res.Applied, res.Failed)
	}
	if f := res.Failed[0]; f.Index != 17 {
		t.Fatalf("first failure %v", f)
	} else {
		wantRcode(t, f.Err, dns.RcodeYXRrset)
	}
	if f := res.Failed[1]; f.Index != 120 {
		t.Fatalf("second failure %v", f)
	} else {
		wantRcode(t, f.Err, dns.RcodeNXRrset)
	}
	if res.Failed[2].Index != 150 {
		t.Fatalf("third failure %v", res.Failed[2])
	}
	if res.Messages > 2*2*8+1 { // 2·k·log2(n): k=2 bad sets, n=197 → 8 levels
		t.Fatalf("%d messages to isolate 2 bad sets in 197", res.Messages)
	}
	if got := lookup(t, s.DNSAddr, "n199."+zone, dns.TypeA); len(got) != 1 {
		t.Fatal("good change after the bad ones not applied")
	}
	if got := lookup(t, s.DNSAddr, "taken."+zone, dns.TypeA); len(got) != 1 || !strings.Contains(got[0], "198.18.0.1") {
		t.Fatalf("guarded set overwritten: %v", got)
	}
}

// A whole-message failure (wrong key) stops the run instead of bisecting.
func TestBatchStopsOnAuthFailure(t *testing.T) {
	s, k := server(t, false)
	c := client(t, s, bindtest.NewKey(k.Name, k.Algorithm))
	c.opts.BatchSize = 10
	changes := make([]Change, 50)
	for i := range changes {
		changes[i] = Change{Op: Upsert, Set: a(fmt.Sprintf("x%d", i), 60, "198.18.0.1")}
	}
	res, err := c.Apply(ctxT(t), zone, changes)
	wantRcode(t, err, dns.RcodeNotAuth)
	if res.Messages != 1 || len(res.Failed) != 50 || res.Applied != 0 {
		t.Fatalf("messages %d failed %d applied %d", res.Messages, len(res.Failed), res.Applied)
	}
}

// Batches respect the byte cap as well as the record count.
func TestPackBatchByteCap(t *testing.T) {
	c, _ := New("127.0.0.1:1", nil, Options{BatchSize: 100000})
	var bs []built
	for i := 0; i < 3000; i++ {
		b, err := Change{Op: Upsert, Set: RRSet{Name: fmt.Sprintf("long-name-%05d", i), Type: dns.TypeTXT, TTL: 60, Values: []string{`"` + strings.Repeat("v", 40) + `"`}}}.build(zone)
		if err != nil {
			t.Fatal(err)
		}
		bs = append(bs, b)
	}
	n := c.packBatch(zone, len(bs), func(i int) (built, bool) { return bs[i], false })
	if n <= 100 || n >= len(bs) {
		t.Fatalf("packed %d", n)
	}
	key, _ := NewKey("k", "hmac-sha512", "c2VjcmV0")
	m := message(zone, bs[:n], make([]bool, n))
	m.SetTsig(key.Name, key.Algorithm, fudge, time.Now().Unix())
	if l := m.Len(); l > DefaultMaxMessageSize || l < DefaultMaxMessageSize*8/10 {
		t.Fatalf("batch of %d is %d bytes", n, l)
	}
}

// TestSignedAfterIdleClose: named closes a kept connection after
// tcp-idle-timeout; the UPDATE that meets the closed connection is resent
// on a new one, and must still be signed. miekg/dns strips the TSIG record
// from a message it signs, so the resend once went out unsigned and named
// denied it (seen after every idle spell of 30 s in the local cluster).
func TestSignedAfterIdleClose(t *testing.T) {
	k := bindtest.NewKey("update-key", "hmac-sha256")
	s := bindtest.Start(t, bindtest.Options{
		Keys:    []bindtest.Key{k},
		Options: "tcp-idle-timeout 10;", // 1 s, in units of 100 ms
		Files:   map[string]string{"dyn.test.db": bindtest.SeedZone(zone, 1)},
		Config:  `zone "dyn.test" { type primary; file "dyn.test.db"; allow-update { key "update-key"; }; };`,
	})
	c := client(t, s, k)
	ctx := ctxT(t)
	for i := range 3 {
		if i > 0 {
			time.Sleep(2500 * time.Millisecond) // past the idle timeout: named closes the kept connection
		}
		if err := c.Update(ctx, zone, Change{Op: Upsert, Set: a(fmt.Sprintf("idle%d", i), 60, "198.18.0.1")}); err != nil {
			t.Fatalf("update %d after an idle spell: %v\n%s", i, err, bindtest.Tail(s.Log(), 10))
		}
	}
	if strings.Contains(s.Log(), "denied") {
		t.Errorf("named denied an update:\n%s", bindtest.Tail(s.Log(), 10))
	}
}
