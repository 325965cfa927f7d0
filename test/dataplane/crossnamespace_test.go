package dataplane

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestRecordFromAnotherNamespace (issue 14 item 3): an application team's
// DNSRecord, in a namespace of its own, lands in a zone of the DNS team's
// namespace that admits it (allowedRecords); when the zone's owner stops
// admitting that namespace, the record's data leaves the zone and the
// record says why.
func TestRecordFromAnotherNamespace(t *testing.T) {
	c := newCluster(t, 1)
	team := fmt.Sprintf("dp-team-%d", os.Getpid()%1000)
	testkit.Must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team, Labels: map[string]string{"team": "a"}}}))
	t.Cleanup(func() { _ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}}) })
	zone := &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "shared.test", Type: v1.ZonePrimary,
		CatalogZoneRef: &v1.LocalObjectReference{Name: "catalog"}, UpdateKeyRef: &v1.LocalObjectReference{Name: "upd"},
		AllowedRecords: &v1.AllowedRecords{Namespaces: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
	}}
	c.create(zone)
	c.waitZone("shared", v1.ReasonServed, 20*time.Second)
	rec := &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "api"}, Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Namespace: c.ns, Name: "shared"}, Name: "api", Type: "A", Values: []string{"192.0.2.80"},
	}}
	testkit.Must(t, k8s.Create(ctx, rec))
	c.waitAll("DNSRecord of another namespace", 10*time.Second, "api.shared.test", dns.TypeA, "192.0.2.80")

	// The zone's owner withdraws the admission.
	testkit.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(zone), zone))
	zone.Spec.AllowedRecords = nil
	testkit.Must(t, k8s.Update(ctx, zone))
	c.waitAll("admission withdrawn", 10*time.Second, "api.shared.test", dns.TypeA)
	c.g.Eventually(func() string {
		var got v1.DNSRecord
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(rec), &got); err != nil {
			return err.Error()
		}
		if r := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady); r != nil {
			return r.Reason + ": " + r.Message
		}
		return ""
	}).WithTimeout(10 * time.Second).Should(HavePrefix(v1.ReasonNotAdmitted + ": BindZone " + c.ns + "/shared does not admit DNSRecords from other namespaces"))
}
