package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/internal/bindtest"
)

// TestSignedZoneSignsUpdatesFromItsFirstMoment: a zone that named signs in
// place (dnssec-policy, no inline signing) takes UPDATEs the moment addzone
// returns, as the DNSRecord controller sends them. named signs an UPDATE
// only once the zone is secure; one that lands while named creates the keys
// and starts the initial signing stays unsigned for good, and validators
// fail every answer for that name ("insecurity proof failed"). The agent's
// ensure returns only once the zone is secure and has been signed again in
// full, so every record that got in is signed.
//
// Each zone races a writer that starts sending UPDATEs before the ensure,
// retrying NOTAUTH until the zone exists. Without the agent's settling, a
// few of the first names of some zones stay unsigned (measured on this
// machine).
func TestSignedZoneSignsUpdatesFromItsFirstMoment(t *testing.T) {
	upd := bindtest.NewKey("updates", "hmac-sha256")
	e := startEnv(t, bindtest.Options{
		Keys: []bindtest.Key{upd},
		Config: `dnssec-policy "fast" {
	keys { csk lifetime unlimited algorithm ecdsap256sha256; };
	nsec3param iterations 0 optout no salt-length 0;
};
`,
	})
	ctx := ctxT(t)
	const zones, names = 6, 25
	for z := range zones {
		zone := fmt.Sprintf("signed%d.test", z)
		var wg sync.WaitGroup
		var written []string
		var werr error
		wg.Go(func() { written, werr = raceUpdates(ctx, e.named.DNSAddr, upd, zone, names) })
		res, err := e.client.EnsureZone(ctx, e.primary("", zone, `update-policy { grant "updates" zonesub ANY; }; dnssec-policy "fast"; inline-signing no; `))
		wg.Wait()
		if err != nil || res.Action != agent.ActionAdded {
			t.Fatalf("%s: ensure: %+v %v", zone, res, err)
		}
		if werr != nil {
			t.Fatalf("%s: %v", zone, werr)
		}
		// The full signing runs in named's background; every name must
		// be signed within seconds, and stay so.
		NewWithT(t).Eventually(func() []string { return unsigned(e.named.DNSAddr, written) }).
			WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(BeEmpty(), "%s: names whose A set has no RRSIG", zone)
	}
}

// raceUpdates adds n A records to zone, one UPDATE each over TCP, retrying
// each until named takes it (NOTAUTH while the zone does not exist yet),
// within 30 s. It returns the names written.
func raceUpdates(ctx context.Context, addr string, k bindtest.Key, zone string, n int) ([]string, error) {
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second, TsigSecret: map[string]string{dns.Fqdn(k.Name): k.Secret}}
	deadline := time.Now().Add(30 * time.Second)
	var names []string
	for i := range n {
		name := fmt.Sprintf("n%d.%s.", i, zone)
		rr, err := dns.NewRR(name + " 300 IN A 192.0.2.1")
		if err != nil {
			return names, err
		}
		for {
			m := new(dns.Msg)
			m.SetUpdate(dns.Fqdn(zone))
			m.Insert([]dns.RR{rr})
			m.SetTsig(dns.Fqdn(k.Name), dns.HmacSHA256, 300, time.Now().Unix())
			r, _, err := c.ExchangeContext(ctx, m, addr)
			if err == nil && r.Rcode == dns.RcodeSuccess {
				names = append(names, name)
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return names, fmt.Errorf("UPDATE of %s not taken within 30s: %v %v", name, r, err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return names, nil
}

// unsigned lists the names whose A answer carries no RRSIG over it.
func unsigned(addr string, names []string) []string {
	var out []string
	for _, name := range names {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		m.SetEdns0(4096, true)
		r, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, addr)
		signed := false
		if err == nil {
			for _, rr := range r.Answer {
				if s, ok := rr.(*dns.RRSIG); ok && s.TypeCovered == dns.TypeA {
					signed = true
				}
			}
		}
		if !signed {
			out = append(out, name)
		}
	}
	return out
}
