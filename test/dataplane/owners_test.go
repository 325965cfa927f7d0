package dataplane

import (
	"errors"
	"fmt"
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

// TestUpdateKeyCannotTouchOwnedSets (issue 14 item 5): a client holding
// the zone's update key (external-dns, nsupdate) changes the zone's other
// names, but an UPDATE that would change a record set the operator owns
// (an inline record, a DNSRecord, the apex NS) is refused with REFUSED and
// changes nothing, through the primary or through a secondary that
// forwards it. The guard follows the DNSRecords: a new one is guarded, a
// deleted one's name is free again.
func TestUpdateKeyCannotTouchOwnedSets(t *testing.T) {
	c := newCluster(t, 1)
	zone := &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "guarded"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "guarded.test", Type: v1.ZonePrimary,
		UpdateKeyRef: &v1.LocalObjectReference{Name: "upd"},
		Records:      []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}},
	}}
	// The secondary's allow-update-forwarding is in named.conf: the pods
	// restart on the config that has it, as the operator's roll would.
	c.Roll([]v1.BindZone{*zone})
	c.create(zone)
	c.waitZone("guarded", v1.ReasonServed, 20*time.Second)
	c.create(&v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "api"}, Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Name: "guarded"}, Name: "api", Type: "A", Values: []string{"192.0.2.80"},
	}})
	c.waitAll("DNSRecord", 10*time.Second, "api.guarded.test", dns.TypeA, "192.0.2.80")

	clientOf := func(addr string) *dnsclient.Client {
		cl, err := dnsclient.New(addr, ptr.To(c.key("upd")), dnsclient.Options{Timeout: 5 * time.Second})
		testkit.Must(t, err)
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	primary, secondary := clientOf(c.Nodes[0].DNSAddr()), clientOf(c.Nodes[1].DNSAddr())
	upsert := func(name string, typ uint16, value string) dnsclient.Change {
		return dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{Name: name, Type: typ, TTL: 60, Values: []string{value}}}
	}
	refused := func(cl *dnsclient.Client, what string, changes ...dnsclient.Change) {
		t.Helper()
		err := cl.Update(ctx, "guarded.test", changes...)
		var re *dnsclient.RcodeError
		if !errors.As(err, &re) || re.Rcode != dns.RcodeRefused {
			t.Fatalf("%s: err = %v, want REFUSED", what, err)
		}
	}

	for _, cl := range []*dnsclient.Client{primary, secondary} {
		refused(cl, "an inline record", upsert("www.guarded.test.", dns.TypeA, "198.18.0.66"))
		refused(cl, "a DNSRecord", upsert("api.guarded.test.", dns.TypeA, "198.18.0.66"))
		refused(cl, "the apex NS", upsert("guarded.test.", dns.TypeNS, "ns.evil.example."))
		refused(cl, "a free name next to an owned one", upsert("free.guarded.test.", dns.TypeA, "198.18.0.1"), upsert("api.guarded.test.", dns.TypeA, "198.18.0.66"))
	}
	c.waitAll("the inline record kept", 5*time.Second, "www.guarded.test", dns.TypeA, "192.0.2.1")
	c.waitAll("the DNSRecord kept", 5*time.Second, "api.guarded.test", dns.TypeA, "192.0.2.80")
	c.waitAll("nothing of a refused UPDATE applied", 5*time.Second, "free.guarded.test", dns.TypeA)

	testkit.Must(t, primary.Update(ctx, "guarded.test", upsert("free.guarded.test.", dns.TypeA, "198.18.0.1")))
	testkit.Must(t, secondary.Update(ctx, "guarded.test", upsert("www.guarded.test.", dns.TypeTXT, `"other type"`)))
	c.waitAll("a free name", 5*time.Second, "free.guarded.test", dns.TypeA, "198.18.0.1")
	c.waitAll("another type at an owned name", 5*time.Second, "www.guarded.test", dns.TypeTXT, `"other type"`)

	// A new DNSRecord is guarded once the operator has told the agent; a
	// deleted one's name is free again.
	c.create(&v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Name: "guarded"}, Name: "late", Type: "TXT", Values: []string{`"mine"`},
	}})
	c.waitAll("the late DNSRecord", 10*time.Second, "late.guarded.test", dns.TypeTXT, `"mine"`)
	c.g.Eventually(func() error {
		err := primary.Update(ctx, "guarded.test", upsert("late.guarded.test.", dns.TypeTXT, `"theirs"`))
		if err == nil {
			return fmt.Errorf("the update key overwrote the new DNSRecord")
		}
		var re *dnsclient.RcodeError
		if errors.As(err, &re) && re.Rcode == dns.RcodeRefused {
			return nil
		}
		return err
	}).WithTimeout(10*time.Second).Should(Succeed(), "the new DNSRecord guarded")
	testkit.Must(t, k8s.Delete(ctx, &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "api"}}))
	c.waitAll("the DNSRecord deleted", 10*time.Second, "api.guarded.test", dns.TypeA)
	c.g.Eventually(func() error {
		return primary.Update(ctx, "guarded.test", upsert("api.guarded.test.", dns.TypeA, "198.18.0.9"))
	}).WithTimeout(10*time.Second).Should(Succeed(), "the deleted DNSRecord's name free again")
	c.waitAll("the freed name written", 5*time.Second, "api.guarded.test", dns.TypeA, "198.18.0.9")
}
