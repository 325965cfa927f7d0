package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/server"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
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
	e, upd := startSigningEnv(t)
	ctx := ctxT(t)
	const zones, names = 6, 25
	for z := range zones {
		zone := fmt.Sprintf("signed%d.test", z)
		var wg sync.WaitGroup
		var written []string
		var werr error
		wg.Go(func() { written, werr = raceUpdates(ctx, e.named.DNSAddr, upd, zone, names) })
		res, err := e.client.EnsureZone(ctx, e.primary("", zone, signedClause))
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

// signedClause is the zone clause both signing tests ensure: UPDATEs with
// key "updates", signed in place by policy "fast". "ANY" is quoted as
// render writes it and showzone prints it, so an ensure of a zone named
// already has finds the clause unchanged.
const signedClause = `update-policy { grant "updates" zonesub "ANY"; }; dnssec-policy "fast"; inline-signing no; `

// startSigningEnv starts named with the "fast" policy (one CSK, NSEC3) and
// the key "updates", and an agent for it.
func startSigningEnv(t *testing.T) (*env, bindtest.Key) {
	t.Helper()
	upd := bindtest.NewKey("updates", "hmac-sha256")
	return startEnv(t, bindtest.Options{
		Keys: []bindtest.Key{upd},
		Config: `dnssec-policy "fast" {
	keys { csk lifetime unlimited algorithm ecdsap256sha256; };
	nsec3param iterations 0 optout no salt-length 0;
};
`,
	}), upd
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

// TestSigningSettlesOnTheEnsureAfterAnInterruption: named already has a
// signed zone with names that stayed unsigned, as when the agent's control
// session broke between addzone and the full signing, or when an agent
// from before the store remembered the signing added the zone. The next
// ensure finds the clause unchanged and must still sign the zone in full,
// and remember that it did (zones.journal).
//
// The zones are added here with a raw rndc addzone raced by UPDATEs, as
// the agent did before it settled the signing. A zone whose writer lost
// the race has no stuck name and proves nothing; the test stops after two
// that had some, and skips if none of its twelve did.
func TestSigningSettlesOnTheEnsureAfterAnInterruption(t *testing.T) {
	e, upd := startSigningEnv(t)
	ctx := ctxT(t)
	rc := controlSession(ctx, t, e.named)
	const names = 25
	repaired := 0
	for z := 0; z < 12 && repaired < 2; z++ {
		g := NewWithT(t)
		zone := fmt.Sprintf("interrupted%d.test", z)
		req := e.primary("", zone, signedClause)
		file := e.paths.PrimaryZoneFile("", zone)
		g.Expect(os.MkdirAll(filepath.Dir(file), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(file, []byte(req.Seed), 0o644)).To(Succeed())
		var wg sync.WaitGroup
		var written []string
		var werr error
		wg.Go(func() { written, werr = raceUpdates(ctx, e.named.DNSAddr, upd, zone, names) })
		_, err := rc.Command(ctx, "addzone "+zone+" "+req.Clause)
		wg.Wait()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(werr).NotTo(HaveOccurred())
		// Once named calls the zone secure, a name still unsigned stays
		// so: named signs UPDATEs from then on, never the earlier ones.
		g.Eventually(func() (string, error) {
			r, err := rc.Command(ctx, "zonestatus "+zone)
			return r.Text, err
		}).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(ContainSubstring("secure: yes"))
		if len(unsigned(e.named.DNSAddr, written)) == 0 {
			continue
		}
		repaired++
		res, err := e.client.EnsureZone(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Action).To(Equal(agent.ActionUnchanged))
		g.Eventually(func() []string { return unsigned(e.named.DNSAddr, written) }).
			WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(BeEmpty(), "%s: names whose A set has no RRSIG", zone)
		journal, err := os.ReadFile(filepath.Join(e.paths.DataDir, server.JournalFile))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(journal)).To(MatchRegexp(`"zone":"%s\.?","type":"primary"[^\n]*"signingSettled":true`, regexp.QuoteMeta(zone)))
	}
	if repaired == 0 {
		t.Skip("no zone kept an unsigned name from its race with addzone; the repair was not exercised")
	}
	t.Logf("%d zones with names left unsigned were signed in full by their next ensure", repaired)
}
