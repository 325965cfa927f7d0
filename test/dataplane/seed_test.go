package dataplane

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent/validate"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestLargeZoneFromConfigMaps (issue 46 item 4): a zone of 30,000
// records kept in two ConfigMaps (spec.seedFrom) is loaded by the primary
// and transferred to the secondary; spec.records apply on top and the
// drift check leaves the seeded records alone; a ConfigMap not annotated
// for the zone keeps the zone off the primary and is named; a primary that
// lost its volume loads the file again.
func TestLargeZoneFromConfigMaps(t *testing.T) {
	c := newCluster(t, 1)
	const zoneName = "seeded.test"
	var file bytes.Buffer
	fmt.Fprintf(&file, "$ORIGIN %s.\n$TTL 300\n@ SOA ns1 hostmaster 2026120701 300 60 1209600 60\n@ NS ns1\nns1 A 127.0.0.1\n", zoneName)
	for i := range 30000 {
		if i == 15000 {
			file.WriteString("; part two\n")
		}
		fmt.Fprintf(&file, "h%d A 198.18.%d.%d\n", i, i/250%250, i%250+1)
	}
	first, second, _ := bytes.Cut(file.Bytes(), []byte("; part two\n"))
	second = append([]byte("; part two\n"), second...)
	part := func(name string, data []byte, annotated bool) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{v1.SeedDataKey: string(data)}}
		if annotated {
			cm.Annotations = map[string]string{v1.AnnotationSeedFor: "seeded"}
		}
		return cm
	}
	c.create(part("seeded-seed-0", first, true))
	c.create(part("seeded-seed-1", second, false))
	c.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "seeded"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: zoneName, Type: v1.ZonePrimary,
		CatalogZoneRef: &v1.LocalObjectReference{Name: "catalog"},
		SOA:            &v1.SOASpec{PrimaryNameServer: "ns1." + zoneName, ResponsiblePerson: "hostmaster." + zoneName},
		SeedFrom: &v1.ZoneSeed{
			ConfigMaps: []v1.LocalObjectReference{{Name: "seeded-seed-0"}, {Name: "seeded-seed-1"}},
			SHA256:     validate.SeedDigest(file.Bytes()),
		},
	}})
	z := c.waitZone("seeded", v1.ReasonSeedUnusable, 30*time.Second)
	ready := meta.FindStatusCondition(z.Status.Conditions, v1.ConditionReady)
	g := NewWithT(t)
	g.Expect(ready.Message).To(ContainSubstring(`ConfigMap "seeded-seed-1" (spec.seedFrom.configMaps[1]) lacks the annotation bind.unkin.net/seed-for: seeded`))
	primary, secondary := c.Nodes[0], c.Nodes[1]
	g.Expect(served(primary.DNSAddr(), "h1."+zoneName, dns.TypeA)).To(BeEmpty(), "no zone from a file the zone may not read")

	var cm corev1.ConfigMap
	testkit.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "seeded-seed-1"}, &cm))
	cm.Annotations = map[string]string{v1.AnnotationSeedFor: "seeded"}
	testkit.Must(t, k8s.Update(ctx, &cm))
	c.editZone("seeded", func(z *v1.BindZone) {
		z.Annotations = map[string]string{v1.AnnotationResync: "annotated"}
		z.Spec.Records = []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.80"}}}
	})
	c.waitZone("seeded", v1.ReasonServed, 60*time.Second)
	for _, n := range c.Nodes {
		c.g.Eventually(func() []string { return served(n.DNSAddr(), "h29999."+zoneName, dns.TypeA) }).WithTimeout(20*time.Second).
			Should(Equal([]string{"198.18.119.250"}), "the last seeded record on %s", n.Name)
		c.g.Eventually(func() []string { return served(n.DNSAddr(), "www."+zoneName, dns.TypeA) }).WithTimeout(20*time.Second).
			Should(Equal([]string{"192.0.2.80"}), "spec.records on top of the seed on %s", n.Name)
	}

	// A drift check keeps the seed's records: they are not the operator's.
	c.editZone("seeded", func(z *v1.BindZone) { z.Annotations = map[string]string{v1.AnnotationResync: "drift"} })
	c.g.Eventually(func() string { return c.zone("seeded").Status.ObservedResync }).WithTimeout(20 * time.Second).Should(Equal("drift"))
	g.Expect(served(secondary.DNSAddr(), "h0."+zoneName, dns.TypeA)).To(Equal([]string{"198.18.0.1"}))

	c.Wipe(primary)
	g.Expect(served(primary.DNSAddr(), "h1."+zoneName, dns.TypeA)).To(BeEmpty(), "the wiped primary serves the zone no more")
	c.editZone("seeded", func(z *v1.BindZone) { z.Annotations = map[string]string{v1.AnnotationResync: "wiped"} })
	c.waitZone("seeded", v1.ReasonServed, 60*time.Second)
	c.g.Eventually(func() []string { return served(primary.DNSAddr(), "h29999."+zoneName, dns.TypeA) }).WithTimeout(20*time.Second).
		Should(Equal([]string{"198.18.119.250"}), "the primary loads the seed again on its new volume")
	c.g.Eventually(func() []string { return served(primary.DNSAddr(), "www."+zoneName, dns.TypeA) }).WithTimeout(20*time.Second).
		Should(Equal([]string{"192.0.2.80"}), "and spec.records on top")
	var events corev1.EventList
	c.g.Eventually(func() int {
		testkit.Must(t, k8s.List(ctx, &events, client.InNamespace(c.ns)))
		return len(slices.DeleteFunc(events.Items, func(e corev1.Event) bool { return e.Reason != "SeedLoaded" }))
	}).WithTimeout(10*time.Second).Should(BeNumerically(">=", 1), "a SeedLoaded event (the reload's repeats the first's)")
}
