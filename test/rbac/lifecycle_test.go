package rbac

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// tenants numbers the test's namespaces (-count runs it again).
var tenants atomic.Int64

// noDataPlane stands for BIND pods envtest cannot run: no pod has an
// address and no primary answers, so zones and records report that and
// the manager makes no network call.
type noDataPlane struct{}

var errNoDataPlane = errors.New("envtest runs no BIND pods")

func (noDataPlane) Resolve(context.Context, *v1.BindZone) (clusterpods.ZoneServer, error) {
	return clusterpods.ZoneServer{}, errNoDataPlane
}

func (noDataPlane) Pods(context.Context, *v1.BindCluster) ([]clusterpods.PodEndpoint, error) {
	return nil, nil
}

func (noDataPlane) Transfer(context.Context, *v1.BindCluster) (string, int32, error) {
	return "", 0, errNoDataPlane
}

// The generated role grants exactly what the code uses: reads, patches
// (server-side apply, finalizers, status), create (an apply that creates
// is also authorized as create), update only on Secrets (a generated TSIG
// Secret's template metadata), finalizer rights for blockOwnerDeletion,
// and nothing that deletes.
func TestGeneratedRoleGrants(t *testing.T) {
	sa, err := client.New(saConfig, client.Options{Scheme: testkit.Scheme()})
	testkit.Must(t, err)
	type access struct {
		group, resource, verb string
		allowed               bool
	}
	var table []access
	for _, r := range []struct{ group, resource string }{
		{"", "configmaps"}, {"", "services"}, {"apps", "statefulsets"},
		{"policy", "poddisruptionbudgets"}, {"networking.k8s.io", "networkpolicies"},
	} {
		for verb, allowed := range map[string]bool{"get": true, "list": true, "watch": true, "patch": true, "create": true, "update": false, "delete": false, "deletecollection": false} {
			table = append(table, access{r.group, r.resource, verb, allowed})
		}
	}
	for verb, allowed := range map[string]bool{"get": true, "list": true, "watch": true, "patch": true, "create": true, "update": true, "delete": false, "deletecollection": false} {
		table = append(table, access{"", "secrets", verb, allowed})
	}
	for verb, allowed := range map[string]bool{"get": true, "list": true, "watch": true, "create": false, "update": false, "patch": false, "delete": false} {
		table = append(table, access{"", "pods", verb, allowed})
	}
	for _, res := range []string{"bindclusters", "bindtsigkeys", "bindacls", "bindviews", "bindcatalogzones", "bindpolicies", "binddnssecpolicies"} {
		for verb, allowed := range map[string]bool{"get": true, "list": true, "watch": true, "create": false, "update": false, "patch": false, "delete": false} {
			table = append(table, access{v1.GroupVersion.Group, res, verb, allowed})
		}
	}
	for _, res := range []string{"bindzones", "dnsrecords"} {
		for verb, allowed := range map[string]bool{"get": true, "list": true, "watch": true, "patch": true, "create": false, "update": false, "delete": false} {
			table = append(table, access{v1.GroupVersion.Group, res, verb, allowed})
		}
	}
	for _, res := range []string{"bindclusters", "bindtsigkeys", "bindzones", "dnsrecords", "bindcatalogzones", "bindviews", "bindacls", "bindpolicies", "binddnssecpolicies"} {
		table = append(table,
			access{v1.GroupVersion.Group, res + "/status", "patch", true},
			access{v1.GroupVersion.Group, res + "/status", "update", false},
		)
	}
	for _, res := range []string{"bindclusters", "bindtsigkeys", "bindzones", "dnsrecords"} {
		table = append(table, access{v1.GroupVersion.Group, res + "/finalizers", "update", true})
	}
	table = append(table,
		access{"events.k8s.io", "events", "create", true},
		access{"events.k8s.io", "events", "delete", false},
		// A BindZone admits DNSRecords of other namespaces by their labels
		// (spec.allowedRecords): the webhook and the DNSRecord controller
		// read namespaces, and change none.
		access{"", "namespaces", "get", true},
		access{"", "namespaces", "watch", true},
		access{"", "namespaces", "update", false},
		access{"", "namespaces", "delete", false},
		access{"rbac.authorization.k8s.io", "clusterroles", "escalate", false},
		access{"", "serviceaccounts/token", "create", false},
		// The BindTSIGKey webhook asks whether the requester may read a
		// Secret it imports.
		access{"authorization.k8s.io", "subjectaccessreviews", "create", true},
	)
	for _, a := range table {
		t.Run(fmt.Sprintf("%s %s.%s", a.verb, a.resource, a.group), func(t *testing.T) {
			resource, sub, _ := cut(a.resource)
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: "any-tenant", Group: a.group, Resource: resource, Subresource: sub, Verb: a.verb,
				},
			}}
			testkit.Must(t, sa.Create(ctx, review))
			NewWithT(t).Expect(review.Status.Allowed).To(Equal(a.allowed), "%s", review.Status.Reason)
		})
	}
}

func cut(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Every kind of config/samples, plus an imported key, goes through create,
// update and delete with the manager running as its ServiceAccount; the
// API server refuses it nothing.
func TestLifecycleUnderGeneratedRole(t *testing.T) {
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tenant-%d", tenants.Add(1))}}
	testkit.Must(t, k8sClient.Create(ctx, ns))
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns.Name, Name: name} }

	var samples []*unstructured.Unstructured
	for _, f := range []string{"bindtsigkey", "bindacl", "bindcluster", "bindcluster_resolver", "bindview", "bindcatalogzone", "binddnssecpolicy", "bindzone", "bindzone_forward", "bindpolicy", "dnsrecord"} {
		samples = append(samples, testkit.ReadObjects(t, filepath.Join(testkit.RepoRoot(), "config", "samples", "bind_v1alpha1_"+f+".yaml"))...)
	}
	for _, u := range samples {
		u.SetNamespace(ns.Name)
		testkit.Must(t, k8sClient.Create(ctx, u))
	}
	testkit.Must(t, k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy-key", Namespace: ns.Name},
		Data:       map[string][]byte{v1.TSIGSecretKey: []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")},
	}))
	testkit.Must(t, k8sClient.Create(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns.Name},
		Spec: v1.BindTSIGKeySpec{ImportExisting: true, SecretName: "legacy-key"}}))

	ready := func(g Gomega, obj client.Object, conds *[]metav1.Condition, status metav1.ConditionStatus, reason string) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		c := meta.FindStatusCondition(*conds, v1.ConditionReady)
		g.Expect(c).NotTo(BeNil(), "%T %s has no Ready condition", obj, obj.GetName())
		g.Expect(c.Status).To(Equal(status), "%T %s: %s", obj, obj.GetName(), c.Message)
		g.Expect(c.Reason).To(Equal(reason), "%T %s: %s", obj, obj.GetName(), c.Message)
	}

	// What each kind reaches without BIND pods.
	keys := []struct{ name, reason string }{{"transfer", v1.ReasonKeyGenerated}, {"external-dns", v1.ReasonKeyGenerated}, {"legacy", v1.ReasonKeyImported}}
	for _, k := range keys {
		g.Eventually(func(g Gomega) {
			var o v1.BindTSIGKey
			o.Name, o.Namespace = k.name, ns.Name
			ready(g, &o, &o.Status.Conditions, metav1.ConditionTrue, k.reason)
		}).Should(Succeed(), "BindTSIGKey %s", k.name)
	}
	hashes := map[string]string{}
	for _, name := range []string{"authoritative", "resolver"} {
		g.Eventually(func(g Gomega) {
			var c v1.BindCluster
			g.Expect(k8sClient.Get(ctx, key(name), &c)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionConfigValid)).To(BeTrue(), "ConfigValid: %v", c.Status.Conditions)
			ready(g, &c, &c.Status.Conditions, metav1.ConditionFalse, v1.ReasonNotReady)
			var sts appsv1.StatefulSet
			g.Expect(k8sClient.Get(ctx, key(name), &sts)).To(Succeed())
			g.Expect(sts.Spec.Template.Annotations[v1.AnnotationConfigHash]).To(Equal(c.Status.ConfigHash))
			hashes[name] = c.Status.ConfigHash
		}).Should(Succeed(), "BindCluster %s rendered, checked and applied", name)
	}
	g.Eventually(func(g Gomega) {
		var z v1.BindZone
		g.Expect(k8sClient.Get(ctx, key("example-com"), &z)).To(Succeed())
		g.Expect(z.Finalizers).To(ContainElement("bind.unkin.net/bindzone"))
		g.Expect(z.Status.ObservedGeneration).To(Equal(z.Generation))
		ready(g, &z, &z.Status.Conditions, metav1.ConditionFalse, v1.ReasonPrimaryNotReady)
	}).Should(Succeed(), "BindZone example-com")
	g.Eventually(func(g Gomega) {
		var r v1.DNSRecord
		g.Expect(k8sClient.Get(ctx, key("api-example-com"), &r)).To(Succeed())
		g.Expect(r.Finalizers).To(BeEmpty())
		ready(g, &r, &r.Status.Conditions, metav1.ConditionFalse, v1.ReasonZoneNotReady)
	}).Should(Succeed(), "DNSRecord api-example-com")
	// A DNSRecord of an earlier release carries the finalizer nothing adds
	// any more: the operator strips it with the rights it has.
	old := &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "earlier-release", Namespace: ns.Name, Finalizers: []string{v1.DNSRecordFinalizer}},
		Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: "example-com"}, Name: "earlier", Type: "A", Values: []string{"192.0.2.9"}}}
	testkit.Must(t, k8sClient.Create(ctx, old))
	g.Eventually(func(g Gomega) []string {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(old), old)).To(Succeed())
		return old.Finalizers
	}).Should(BeEmpty(), "the earlier release's finalizer stripped")
	g.Eventually(func(g Gomega) {
		var c v1.BindCatalogZone
		ready(g, withName(&c, ns.Name, "catalog"), &c.Status.Conditions, metav1.ConditionFalse, v1.ReasonCatalogNotServed)
	}).Should(Succeed(), "BindCatalogZone catalog")

	// Updates: a referenced ACL re-renders, replicas reach the
	// StatefulSet, a template edit reaches the generated Secret.
	edit(t, key("internal-networks"), &v1.BindACL{}, func(a *v1.BindACL) {
		a.Spec.Entries = append(a.Spec.Entries, v1.AddressMatchElement{Address: "198.18.0.0/15"})
	})
	edit(t, key("authoritative"), &v1.BindCluster{}, func(c *v1.BindCluster) { c.Spec.Replicas = ptr.To[int32](2) })
	edit(t, key("external-dns"), &v1.BindTSIGKey{}, func(k *v1.BindTSIGKey) {
		k.Spec.SecretTemplate.Labels = map[string]string{"team": "dns"}
	})
	g.Eventually(func(g Gomega) {
		var c v1.BindCluster
		g.Expect(k8sClient.Get(ctx, key("resolver"), &c)).To(Succeed())
		g.Expect(c.Status.ConfigHash).NotTo(Equal(hashes["resolver"]))
	}).Should(Succeed(), "the ACL change re-renders the resolver")
	g.Eventually(func(g Gomega) *int32 {
		var sts appsv1.StatefulSet
		g.Expect(k8sClient.Get(ctx, key("authoritative"), &sts)).To(Succeed())
		return sts.Spec.Replicas
	}).Should(HaveValue(Equal(int32(2))), "replicas reach the StatefulSet")
	g.Eventually(func(g Gomega) map[string]string {
		var s corev1.Secret
		g.Expect(k8sClient.Get(ctx, key("external-dns-tsig"), &s)).To(Succeed())
		return s.Labels
	}).Should(HaveKeyWithValue("team", "dns"), "the template edit reaches the Secret")

	// Deletes: finalizers come off, everything is gone.
	for i := len(samples) - 1; i >= 0; i-- {
		testkit.Must(t, client.IgnoreNotFound(k8sClient.Delete(ctx, samples[i])))
	}
	testkit.Must(t, k8sClient.Delete(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns.Name}}))
	for _, u := range samples {
		g.Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(u), u.DeepCopy())
		}).Should(Satisfy(apierrors.IsNotFound), "%s %s is gone", u.GetKind(), u.GetName())
	}

	var events eventsv1.EventList
	testkit.Must(t, k8sClient.List(ctx, &events, client.InNamespace(ns.Name)))
	g.Expect(events.Items).To(ContainElement(HaveField("Reason", v1.ReasonKeyGenerated)), "the manager records events")
	g.Expect(refused.all()).To(BeEmpty(), "requests the API server refused the manager")
}

func withName[T client.Object](o T, namespace, name string) T {
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}

// edit re-reads obj and applies change until the update goes through.
func edit[T client.Object](t *testing.T, key client.ObjectKey, obj T, change func(T)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		if err := k8sClient.Get(ctx, key, obj); err != nil {
			return err
		}
		change(obj)
		return k8sClient.Update(ctx, obj)
	}).Should(Succeed())
}
