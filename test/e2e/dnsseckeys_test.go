package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestSignedZoneKeysOutliveThePrimaryVolume (issue 46 item 6): the keys
// of a signed zone are copied into the Secret its BindZone owns; when the
// primary's PersistentVolumeClaim is deleted and the primary comes back
// on an empty volume, the operator restores them before it adds the zone
// again, so delv anchored on the DS read before the loss still reports
// "fully validated" on every pod afterwards.
func TestSignedZoneKeysOutliveThePrimaryVolume(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-keys")
	a := authoritative{Namespace: ns, Name: "keeper", Replicas: 2, Catalog: "catalog.keeper.internal", Storage: true}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	testkit.Must(t, env.Client.Create(ctx, &v1.BindDNSSECPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"},
		Spec: v1.BindDNSSECPolicySpec{Keys: []v1.DNSSECKey{
			{Role: "KSK", Algorithm: "ecdsap256sha256", Lifetime: v1.DNSSECLifetimeUnlimited},
			{Role: "ZSK", Algorithm: "ecdsap256sha256", Lifetime: v1.DNSSECLifetimeUnlimited},
		}},
	}))
	const zone = "keys.e2e.example"
	z := a.catalogZone("keys", zone, "", v1.RecordSet{Name: "www", Type: "A", Values: []string{"192.0.2.41"}})
	z.Spec.DNSSECPolicyRef = &v1.LocalObjectReference{Name: "kept"}
	testkit.Must(t, env.Client.Create(ctx, z))
	ips := a.servedByAll(ctx, t, zone)

	name := "www." + zone
	ds := validatingDS(ctx, t, z, ips, name, func(g Gomega, z *v1.BindZone) {
		stored := meta.FindStatusCondition(z.Status.Conditions, v1.ConditionDNSSECKeysStored)
		g.Expect(stored).NotTo(BeNil())
		g.Expect(stored.Reason).To(Equal(v1.ReasonKeysStored), stored.Message)
	})
	var secret corev1.Secret
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: z.Status.DNSSEC.KeysSecret}, &secret))
	t.Logf("DS %v; Secret %s holds %d key files", ds, secret.Name, len(secret.Data))

	waitReady := (&chaos{a: a}).losePrimaryVolume(ctx, t)
	waitReady()
	ips = a.servedByAll(ctx, t, zone)
	anchors := writeAnchors(t, zone, ds)
	start := time.Now()
	NewWithT(t).Eventually(func(g Gomega) {
		for _, ip := range ips {
			out, err := delvOnce(ctx, anchors, zone, ip, name)
			g.Expect(err).NotTo(HaveOccurred(), "delv @%s with the DS from before the loss %v:\n%s", ip, ds, out)
		}
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "every pod's answer validates with the DS from before the primary lost its volume")
	NewWithT(t).Eventually(func() bool {
		var events corev1.EventList
		if env.Client.List(ctx, &events, client.InNamespace(ns)) != nil {
			return false
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == "DNSSECKeysRestored" && e.InvolvedObject.Name == z.Name
		})
	}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "an event on the zone that says its keys were restored")
	t.Logf("after the primary's volume was lost, delv with the DS from before fully validated on all %d pods within %s", len(ips), time.Since(start).Round(time.Second))
}
