package dataplane

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestSecondaryThatMissedTheCatalogNotifyCatchesUp: a catalog change that
// reached the secondaries without a NOTIFY (here the serial moves on the
// primary by a signed UPDATE sent around the operator; on a real node, a
// secondary still starting when the operator sent it) reaches them through
// the NOTIFY the BindCatalogZone controller re-sends to secondaries behind
// the primary, long before the catalog's 300 s SOA refresh.
func TestSecondaryThatMissedTheCatalogNotifyCatchesUp(t *testing.T) {
	c := newCluster(t, 2)
	const catZone = "catalog.example.internal"
	primary := c.Nodes[0]
	for _, n := range c.Nodes[1:] {
		c.g.Eventually(func() uint32 { return serialAt(n.DNSAddr(), catZone) }).WithTimeout(10*time.Second).
			Should(Equal(serialAt(primary.DNSAddr(), catZone)), "%s to hold the catalog", n.Name)
	}
	vals := served(primary.DNSAddr(), catZone, dns.TypeSOA)
	if len(vals) != 1 {
		t.Fatalf("the primary serves catalog SOA %v", vals)
	}
	rr, err := dns.NewRR(fmt.Sprintf("%s 0 IN SOA %s", catZone+".", vals[0]))
	testkit.Must(t, err)
	soa := rr.(*dns.SOA)
	soa.Serial += 10
	upd, err := dnsclient.New(primary.DNSAddr(), ptr.To(c.key("transfer")), dnsclient.Options{Timeout: 5 * time.Second})
	testkit.Must(t, err)
	defer upd.Close()
	changed := time.Now()
	testkit.Must(t, upd.SetSOA(ctx, catZone, soa))
	for _, n := range c.Nodes[1:] {
		c.g.Eventually(func() uint32 { return serialAt(n.DNSAddr(), catZone) }).WithTimeout(30*time.Second).
			Should(Equal(soa.Serial), "%s to transfer the catalog without waiting for its refresh", n.Name)
		t.Logf("%s holds catalog serial %d %s after the change", n.Name, soa.Serial, time.Since(changed).Round(time.Millisecond))
	}
}
