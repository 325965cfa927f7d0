package dnsclient

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"github.com/miekg/dns"
)

// The secret never shows in any rendering of a Key, a Client, a log line
// or an error, including errors from a real refused exchange.
func TestKeySecretMasked(t *testing.T) {
	s, k := server(t, false)
	wrong := bindtest.NewKey(k.Name, k.Algorithm)
	key, err := NewKey("Update-Key", "HMAC-SHA256", wrong.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if key.Name != "update-key." || key.Algorithm != dns.HmacSHA256 {
		t.Fatalf("not normalised: %q %q", key.Name, key.Algorithm)
	}
	var logs bytes.Buffer
	c, err := New(s.DNSAddr, &key, Options{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	updErr := c.Update(ctxT(t), zone, Change{Op: Upsert, Set: a("x", 60, "198.18.0.1")})
	if updErr == nil {
		t.Fatal("update with the wrong secret succeeded")
	}
	_, axfrErr := c.AXFR(ctxT(t), zone)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("key", "key", key)
	var out strings.Builder
	wrapper := struct {
		K Key
		C *Client
	}{key, c}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		fmt.Fprintf(&out, verb+"\n", key)
		fmt.Fprintf(&out, verb+"\n", &key)
		fmt.Fprintf(&out, verb+"\n", c)
		fmt.Fprintf(&out, verb+"\n", wrapper)
	}
	_, badErr := NewKey("k", "hmac-sha256", wrong.Secret+"%%")
	fmt.Fprintln(&out, updErr, axfrErr, badErr)
	all := out.String() + logs.String()
	raw := string(key.secret.b)
	for _, leak := range []string{wrong.Secret, raw, fmt.Sprintf("%x", raw), k.Secret} {
		if strings.Contains(all, leak) {
			t.Fatalf("secret leaked:\n%s", all)
		}
	}
	if !strings.Contains(logs.String(), masked) || !strings.Contains(logs.String(), "NOTAUTH") {
		t.Fatalf("log lines missing:\n%s", logs.String())
	}
}

// FuzzReply feeds arbitrary wire bytes through everything that interprets
// a reply beyond miekg/dns' own parser: rcode/TSIG handling, SOA
// extraction, transfer framing. None may panic.
func FuzzReply(f *testing.F) {
	seed := func(m *dns.Msg) {
		b, err := m.Pack()
		if err == nil {
			f.Add(b)
		}
	}
	m := new(dns.Msg)
	m.SetQuestion(zone, dns.TypeSOA)
	r := new(dns.Msg)
	r.SetReply(m)
	r.Authoritative = true
	soa, _ := dns.NewRR(zone + " 300 IN SOA ns1." + zone + " hostmaster." + zone + " 7 300 60 1209600 60")
	aRR, _ := dns.NewRR("www." + zone + " 60 IN A 198.18.0.1")
	r.Answer = []dns.RR{soa, aRR, soa}
	seed(r)
	r2 := r.Copy()
	r2.Rcode = dns.RcodeNotAuth
	r2.SetTsig("update-key.", dns.HmacSHA256, 300, 0)
	r2.Extra[0].(*dns.TSIG).Error = dns.RcodeBadSig
	seed(r2)
	f.Fuzz(func(t *testing.T, wire []byte) {
		msg := new(dns.Msg)
		if err := msg.Unpack(wire); err != nil {
			return
		}
		for _, signed := range []bool{false, true} {
			_ = checkReply("update", zone, msg, replyAuth(signed, msg, nil))
		}
		if s, err := soaFromReply(zone, msg); err == nil && s == nil {
			t.Fatal("nil SOA without error")
		}
		if rrs, err := checkTransfer(zone, msg.Answer); err == nil && len(rrs) == 0 {
			t.Fatal("empty transfer accepted")
		}
		_, _ = checkTransfer(zone, append(msg.Answer, msg.Ns...))
	})
}

func TestCheckReply(t *testing.T) {
	m := new(dns.Msg)
	m.SetUpdate(zone)
	r := new(dns.Msg)
	r.SetReply(m)
	if err := checkReply("update", zone, r, replyAuth(true, r, nil)); err == nil {
		t.Fatal("unsigned NOERROR reply to a signed request accepted")
	}
	if err := checkReply("update", zone, r, replyAuth(false, r, nil)); err != nil {
		t.Fatalf("unsigned client: %v", err)
	}
	r.Rcode = dns.RcodeRefused
	err := checkReply("update", zone, r, replyAuth(true, r, nil))
	if re, ok := err.(*RcodeError); !ok || re.RcodeName() != "REFUSED" || re.Verified {
		t.Fatalf("got %v", err)
	}
	if _, err := checkTransfer(zone, nil); err == nil {
		t.Fatal("empty transfer accepted")
	}
}

// A refused transfer is an *RcodeError like a refused query or UPDATE: an
// unknown key is NOTAUTH in a reply that cannot verify, a key the zone does
// not allow is REFUSED in a signed reply.
func TestTransferRefusalsAreRcodeErrors(t *testing.T) {
	s, k := server(t, false)
	for _, tc := range []struct {
		desc     string
		key      bindtest.Key
		rcode    string
		verified bool
	}{
		{"unknown key", bindtest.NewKey("stranger", k.Algorithm), "NOTAUTH", false},
		{"key without transfer rights", bindtest.NewKey("other", k.Algorithm), "REFUSED", true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			srv := s
			if tc.verified {
				// A second named that knows the key but allows transfers to
				// another one.
				srv = bindtest.Start(t, bindtest.Options{
					Keys:   []bindtest.Key{tc.key, k},
					Files:  map[string]string{"dyn.test.db": bindtest.SeedZone(zone, 1)},
					Config: `zone "dyn.test" { type primary; file "dyn.test.db"; allow-transfer { key "update-key"; }; };`,
				})
			}
			_, err := client(t, srv, tc.key).AXFR(ctxT(t), zone)
			var rc *RcodeError
			if !errors.As(err, &rc) || rc.RcodeName() != tc.rcode || rc.Verified != tc.verified || rc.Op != "transfer" {
				t.Fatalf("AXFR: %#v (%v), want a transfer %s, verified=%v", rc, err, tc.rcode, tc.verified)
			}
		})
	}
}

// checkTransfer runs a whole AXFR through axfrFrame, as AXFREach does, and returns the
// records without the closing SOA.
func checkTransfer(zone string, rrs []dns.RR) ([]dns.RR, error) {
	f := axfrFrame{zone: dns.Fqdn(strings.ToLower(zone))}
	for _, rr := range rrs {
		if err := f.next(rr); err != nil {
			return nil, err
		}
	}
	var last dns.RR
	if len(rrs) > 0 {
		last = rrs[len(rrs)-1]
	}
	if _, err := f.end(last); err != nil {
		return nil, err
	}
	return rrs[:len(rrs)-1], nil
}
