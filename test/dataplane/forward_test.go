package dataplane

import (
	"errors"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestSecondaryForwardsSignedUpdates: a client that reaches a secondary
// (the query Service picks any pod; cert-manager's and external-dns'
// RFC 2136 clients are pointed at it) can still update a zone with the
// zone's update key: the secondary forwards the signed UPDATE to the
// primary, and the change reaches every pod. The forwarding grants
// nothing: an UPDATE signed with another key, or with the key of another
// zone, is refused.
func TestSecondaryForwardsSignedUpdates(t *testing.T) {
	c := newCluster(t, 2)
	catalog := &v1.LocalObjectReference{Name: "catalog"}
	open := &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "open"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "open.test", Type: v1.ZonePrimary, CatalogZoneRef: catalog,
		UpdateKeyRef: &v1.LocalObjectReference{Name: "upd"},
	}}
	closed := &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "closed"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "closed.test", Type: v1.ZonePrimary, CatalogZoneRef: catalog,
	}}
	// The secondaries' allow-update-forwarding is in named.conf: the
	// pods restart on the config that has it, as the operator's roll
	// would.
	c.Roll([]v1.BindZone{*open, *closed})
	c.create(open)
	c.create(closed)
	c.waitZone("open", v1.ReasonServed, 30*time.Second)
	c.waitZone("closed", v1.ReasonServed, 30*time.Second)

	secondary := c.Nodes[1]
	send := func(key, zone, name string) error {
		cl, err := dnsclient.New(secondary.DNSAddr(), ptr.To(c.key(key)), dnsclient.Options{Timeout: 5 * time.Second})
		testkit.Must(t, err)
		defer cl.Close()
		return cl.Update(ctx, zone, dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{
			Name: name, Type: dns.TypeTXT, TTL: 60, Values: []string{`"acme-challenge-token"`},
		}})
	}
	testkit.Must(t, send("upd", "open.test", "_acme-challenge.open.test."))
	c.waitAll("forwarded UPDATE", 10*time.Second, "_acme-challenge.open.test", dns.TypeTXT, `"acme-challenge-token"`)

	var rc *dnsclient.RcodeError
	err := send("transfer", "open.test", "other.open.test.")
	NewWithT(t).Expect(errors.As(err, &rc)).To(BeTrue(), "an UPDATE signed with a key the zone does not allow: %v", err)
	t.Logf("signed with another key: %v", err)
	err = send("upd", "closed.test", "_acme-challenge.closed.test.")
	NewWithT(t).Expect(errors.As(err, &rc)).To(BeTrue(), "an UPDATE to a zone without that update key: %v", err)
	t.Logf("to another zone: %v", err)
	c.waitAll("nothing else changed", time.Second, "_acme-challenge.closed.test", dns.TypeTXT)
}
