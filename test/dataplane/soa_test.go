package dataplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestSOAEditReachesEveryPod (issue 13 item 7): spec.soa edited after the
// zone was created (timers and mailbox) is served by the primary with the
// serial one up, and by every secondary.
func TestSOAEditReachesEveryPod(t *testing.T) {
	c := newCluster(t, 2)
	c.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "timers"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "timers.test", Type: v1.ZonePrimary,
		CatalogZoneRef: &v1.LocalObjectReference{Name: "catalog"},
	}})
	c.waitZone("timers", v1.ReasonServed, 20*time.Second)
	primary := c.Nodes[0]
	before := serialAt(primary.DNSAddr(), "timers.test")
	if soa := served(primary.DNSAddr(), "timers.test", dns.TypeSOA); len(soa) != 1 || !strings.HasSuffix(soa[0], " 300 60 1209600 60") {
		t.Fatalf("seed SOA = %v", soa)
	}

	c.editZone("timers", func(z *v1.BindZone) {
		z.Spec.SOA = &v1.SOASpec{ResponsiblePerson: "dns-admin.example.net", Refresh: ptr.To[int32](900), Retry: ptr.To[int32](120), Expire: ptr.To[int32](604800), Minimum: ptr.To[int32](30)}
	})
	c.waitZone("timers", v1.ReasonServed, 20*time.Second)
	want := fmt.Sprintf("dns-admin.example.net. %d 900 120 604800 30", before+1)
	for _, n := range c.Nodes {
		c.g.Eventually(func() string {
			soa := served(n.DNSAddr(), "timers.test", dns.TypeSOA)
			if len(soa) != 1 {
				return fmt.Sprint(soa)
			}
			_, rest, _ := strings.Cut(strings.TrimSpace(soa[0]), " ") // drop the MNAME
			return rest
		}).WithTimeout(10*time.Second).Should(HaveSuffix(want), "%s to serve the edited SOA", n.Name)
	}
}
