package agent_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// bigZone is a zone file of n A records below a SOA and NS with glue.
func bigZone(zone string, serial uint32, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "$ORIGIN %s.\n$TTL 300\n@ IN SOA ns1 hostmaster %d 300 60 1209600 60\n@ IN NS ns1\nns1 IN A 127.0.0.1\n", zone, serial)
	for i := range n {
		fmt.Fprintf(&b, "h%d IN A 198.18.%d.%d\n", i, i/250%250, i%250+1)
	}
	return b.Bytes()
}

// TestLargeZoneIsSeededFromItsFile (issue 46 item 4, at the agent): a zone
// of 100,000 records, far past the small seed an ensure carries, is
// streamed to the agent and loaded by the next ensure; the agent writes it
// only while the zone file is missing, refuses a file whose digest or
// content is wrong without writing anything, and a delete removes the file
// it wrote.
func TestLargeZoneIsSeededFromItsFile(t *testing.T) {
	ctx := ctxT(t)
	g := NewWithT(t)
	const zone = "big.test"
	e := startEnv(t, bindtest.Options{})
	ref := agent.ZoneRef{Zone: zone}
	file := bigZone(zone, 2026120701, 100000)
	digest := validate.SeedDigest(file)

	needed, err := e.client.SeedNeeded(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(needed).To(BeTrue())

	// Refused: a digest that is not the file's, a file of another zone.
	_, err = e.client.Seed(ctx, ref, strings.Repeat("0", 64), int64(len(file)), bytes.NewReader(file))
	g.Expect(err).To(MatchError(ContainSubstring("sha256: the zone file's SHA-256 is " + digest)))
	other := bigZone("other.test", 1, 3)
	_, err = e.client.Seed(ctx, ref, validate.SeedDigest(other), int64(len(other)), bytes.NewReader(other))
	g.Expect(err).To(MatchError(ContainSubstring("lies outside the zone big.test")))
	needed, err = e.client.SeedNeeded(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(needed).To(BeTrue(), "a refused seed writes nothing")

	start := time.Now()
	res, err := e.client.Seed(ctx, ref, digest, int64(len(file)), bytes.NewReader(file))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(agent.SeedResult{Written: true, Records: 100003, Serial: 2026120701}))
	t.Logf("seeded %d bytes (%d records) in %s", len(file), res.Records, time.Since(start).Round(time.Millisecond))

	res, err = e.client.Seed(ctx, ref, digest, int64(len(file)), bytes.NewReader(file))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Written).To(BeFalse())
	g.Expect(res.Reason).To(Equal("the zone file exists; it is kept"))

	_, err = e.client.EnsureZone(ctx, e.primary("", zone, ""))
	g.Expect(err).NotTo(HaveOccurred())
	serial, rcode := soa(t, e.named.DNSAddr, zone)
	g.Expect(rcode).To(Equal(dns.RcodeSuccess))
	g.Expect(serial).To(Equal(uint32(2026120701)), "named serves the seed, not the small seed of the ensure")
	m := new(dns.Msg)
	m.SetQuestion("h99999."+zone+".", dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, e.named.DNSAddr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Answer).To(HaveLen(1))

	path := e.paths.PrimaryZoneFile("", zone)
	_, err = e.client.DeleteZone(ctx, ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() bool { _, err := os.Stat(path); return os.IsNotExist(err) }).
		WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(BeTrue(), "delete removes the file the agent wrote")
}

// TestSeedNamedRefusesIsRemoved: a seed that passes the agent's checks but
// that named does not load (a CNAME beside other data) is removed when the
// ensure fails, so the next BindZone of that name is not stuck with it;
// a seed whose zone is deleted before it was ever added is removed too.
func TestSeedNamedRefusesIsRemoved(t *testing.T) {
	ctx := ctxT(t)
	g := NewWithT(t)
	e := startEnv(t, bindtest.Options{})
	seed := func(zone, extra string) {
		file := append(bigZone(zone, 5, 3), extra...)
		res, err := e.client.Seed(ctx, agent.ZoneRef{Zone: zone}, validate.SeedDigest(file), int64(len(file)), bytes.NewReader(file))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Written).To(BeTrue())
	}
	needed := func(zone string) bool {
		n, err := e.client.SeedNeeded(ctx, agent.ZoneRef{Zone: zone})
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}

	seed("refused.test", "h0 CNAME elsewhere.example.\n")
	_, err := e.client.EnsureZone(ctx, e.primary("", "refused.test", ""))
	g.Expect(err).To(MatchError(ContainSubstring("CNAME and other data")))
	g.Expect(needed("refused.test")).To(BeTrue(), "the refused seed is gone")

	seed("never.test", "")
	_, err = e.client.DeleteZone(ctx, agent.ZoneRef{Zone: "never.test"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(needed("never.test")).To(BeTrue(), "a delete removes a seed whose zone was never added")
}
