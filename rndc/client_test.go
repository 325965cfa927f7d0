package rndc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func keyOf(t testing.TB, k bindtest.Key) Key {
	t.Helper()
	key, err := NewKey(k.Name, k.Algorithm, k.Secret)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func dial(t testing.TB, s *bindtest.Server) *Client {
	t.Helper()
	c, err := Dial(ctxT(t), s.ControlAddr, keyOf(t, s.ControlKey))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustCmd(t *testing.T, c *Client, cmd string) Response {
	t.Helper()
	r, err := c.Command(ctxT(t), cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return r
}

// soaSerial asks named over DNS, so the tests see what named serves, not
// just what the control channel says.
func soaSerial(t *testing.T, addr, zone string) (uint32, int) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeSOA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("SOA %s: %v", zone, err)
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial, r.Rcode
		}
	}
	return 0, r.Rcode
}

// Every HMAC named supports, against a real named: handshake, status, and
// a second command on the same session.
func TestAlgorithms(t *testing.T) {
	for _, alg := range []string{"hmac-md5", "hmac-sha1", "hmac-sha224", "hmac-sha256", "hmac-sha384", "hmac-sha512"} {
		t.Run(alg, func(t *testing.T) {
			s := bindtest.Start(t, bindtest.Options{ControlAlgorithm: alg})
			c := dial(t, s)
			r := mustCmd(t, c, "status")
			if !strings.Contains(r.Text, "server is up and running") {
				t.Fatalf("status text: %q", r.Text)
			}
			mustCmd(t, c, "status")
		})
	}
}

// The zone lifecycle through one session: addzone, showzone, zonestatus,
// modzone, reload, sync, delzone, reconfig; each checked through DNS.
func TestZoneLifecycle(t *testing.T) {
	s := bindtest.Start(t, bindtest.Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	s.WriteFile("life.test.db", bindtest.SeedZone("life.test", 7))

	mustCmd(t, c, `addzone life.test { type primary; file "life.test.db"; };`)
	if serial, rcode := soaSerial(t, s.DNSAddr, "life.test"); serial != 7 {
		t.Fatalf("after addzone: serial %d rcode %d, want 7", serial, rcode)
	}
	if r := mustCmd(t, c, "showzone life.test"); !strings.Contains(r.Text, `file "life.test.db"`) {
		t.Fatalf("showzone: %q", r.Text)
	}
	if r := mustCmd(t, c, "zonestatus life.test"); !strings.Contains(r.Text, "serial: 7") || !strings.Contains(r.Text, "type: primary") {
		t.Fatalf("zonestatus: %q", r.Text)
	}

	// Adding it again is refused by named: a typed error, session intact.
	_, err := c.Command(ctx, `addzone life.test { type primary; file "life.test.db"; };`)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Command != "addzone" || ce.Result == 0 || !strings.Contains(ce.Err, "exists") {
		t.Fatalf("duplicate addzone: %v", err)
	}

	mustCmd(t, c, `modzone life.test { type primary; file "life.test.db"; allow-transfer { any; }; };`)
	if r := mustCmd(t, c, "showzone life.test"); !strings.Contains(r.Text, "allow-transfer") {
		t.Fatalf("showzone after modzone: %q", r.Text)
	}

	s.WriteFile("life.test.db", bindtest.SeedZone("life.test", 8))
	mustCmd(t, c, "reload life.test")
	waitSerial(t, s.DNSAddr, "life.test", 8)

	mustCmd(t, c, "sync life.test")
	mustCmd(t, c, "delzone life.test")
	if _, rcode := soaSerial(t, s.DNSAddr, "life.test"); rcode != dns.RcodeRefused {
		t.Fatalf("after delzone: rcode %s, want REFUSED", dns.RcodeToString[rcode])
	}
	_, err = c.Command(ctx, "zonestatus life.test")
	if !errors.As(err, &ce) || !strings.Contains(ce.Err, "not found") {
		t.Fatalf("zonestatus of a deleted zone: %v", err)
	}
	mustCmd(t, c, "reconfig")
	mustCmd(t, c, "reload")
	mustCmd(t, c, "sync")
}

// waitSerial waits (10 s at most) until named serves the serial: reload
// loads the zone asynchronously.
func waitSerial(t *testing.T, addr, zone string, want uint32) {
	t.Helper()
	NewWithT(t).Eventually(func() uint32 {
		got, _ := soaSerial(t, addr, zone)
		return got
	}).WithTimeout(10*time.Second).WithPolling(10*time.Millisecond).Should(Equal(want), "%s serial", zone)
}

func TestWrongKeyRefused(t *testing.T) {
	s := bindtest.Start(t, bindtest.Options{})
	for _, k := range []bindtest.Key{
		bindtest.NewKey(s.ControlKey.Name, "hmac-sha256"), // same algorithm, other secret
		bindtest.NewKey(s.ControlKey.Name, "hmac-sha512"), // other algorithm
	} {
		c, err := Dial(ctxT(t), s.ControlAddr, keyOf(t, k))
		if err == nil {
			c.Close()
			t.Fatalf("dial with wrong key %s succeeded", k.Algorithm)
		}
		if !errors.Is(err, ErrServerClosed) {
			t.Fatalf("wrong key %s: %v, want ErrServerClosed", k.Algorithm, err)
		}
	}
	// And the right key still works afterwards.
	mustCmd(t, dial(t, s), "status")
}

// Many commands on one session, including failures in between, stay in
// step (serial, nonce).
func TestManyCommandsOneSession(t *testing.T) {
	s := bindtest.Start(t, bindtest.Options{})
	c := dial(t, s)
	for i := 0; i < 50; i++ {
		zone := fmt.Sprintf("z%d.test", i)
		s.WriteFile(zone+".db", bindtest.SeedZone(zone, uint32(i+1)))
		mustCmd(t, c, fmt.Sprintf(`addzone %s { type primary; file "%s.db"; };`, zone, zone))
		if _, err := c.Command(ctxT(t), "zonestatus missing.test"); err == nil {
			t.Fatal("zonestatus of a missing zone succeeded")
		}
	}
	for i := 0; i < 50; i += 7 {
		if serial, _ := soaSerial(t, s.DNSAddr, fmt.Sprintf("z%d.test", i)); serial != uint32(i+1) {
			t.Fatalf("z%d.test serial %d", i, serial)
		}
	}
}

// Requests over 32 KiB are refused before sending; the session survives.
// One just under the limit reaches named.
func TestRequestSizeLimit(t *testing.T) {
	s := bindtest.Start(t, bindtest.Options{})
	c := dial(t, s)
	_, err := c.Command(ctxT(t), "status "+strings.Repeat("x", MaxRequestSize))
	if !errors.Is(err, ErrRequestTooLarge) {
		t.Fatalf("oversized request: %v", err)
	}
	// ~200 bytes of framing; this one fits and named answers it (with an
	// error for the unknown zone, proving it was parsed).
	_, err = c.Command(ctxT(t), "zonestatus "+strings.Repeat("a", MaxRequestSize-400))
	var ce *CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("request just under the limit: %v", err)
	}
	mustCmd(t, c, "status")
}

// A cancelled context interrupts a command and kills the session rather
// than leaving it out of step.
func TestContextDeadline(t *testing.T) {
	// A listener that accepts and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		conn, err := l.Accept()
		if err == nil {
			defer conn.Close()
			buf := make([]byte, 1024)
			for {
				if _, err := conn.Read(buf); err != nil {
					return
				}
			}
		}
	}()
	key, _ := NewKey("k", "hmac-sha256", "c2VjcmV0")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Dial(ctx, l.Addr().String(), key)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial to a silent server: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("deadline not honoured: %s", time.Since(start))
	}
}
