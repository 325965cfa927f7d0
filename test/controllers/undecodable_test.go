package controllers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/importer"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// Objects in the shapes the operator this project descends from stored
// them (the same group and version): what an in-place upgrade leaves in
// etcd. Each one fails to decode into today's types.
const legacyObjects = `
apiVersion: bind.unkin.net/v1alpha1
kind: BindZone
metadata:
  name: legacy
spec:
  clusterRef: {name: dns}
  zoneName: legacy.example
  type: Secondary
  primaries: ["192.0.2.1"]
  allowTransfer: ["any"]
---
apiVersion: bind.unkin.net/v1alpha1
kind: BindCluster
metadata:
  name: legacy
spec:
  mode: Authoritative
  replicas: 1
  transferKeyRef: transfer
`

// TestStoredObjectsThatNoLongerDecodeAreReported: objects stored under an
// earlier schema of the same version (written here while the CRDs accept
// any spec, then the CRDs are put back) would stop a typed cache from
// ever syncing. The manager's cache syncs anyway; each such object is
// reported (Ready=False Invalid with the field and the fix, a warning
// event, the gauge), gets nothing from the operator, and the cluster keeps
// serving the rest.
func TestStoredObjectsThatNoLongerDecodeAreReported(t *testing.T) {
	f := newRecheckFixture(t)
	withAnySpec(t, []string{"bindzones", "bindclusters"}, func() {
		for _, doc := range strings.Split(legacyObjects, "\n---\n") {
			u := &unstructured.Unstructured{}
			testkit.Must(t, yaml.Unmarshal([]byte(doc), &u.Object))
			u.SetNamespace(f.ns)
			// Until the API server uses the permissive schema, it refuses.
			f.g.Eventually(func() error { return k8sClient.Create(ctx, u.DeepCopy()) }).Should(Succeed())
		}
	})

	// A cache without the operator's informers never syncs: the test
	// stores what it means to.
	plain, err := cache.New(cfg, cache.Options{Scheme: k8sClient.Scheme()})
	testkit.Must(t, err)
	if synced := syncWithin(t, plain, &v1.BindZone{}, 3*time.Second); synced {
		t.Fatal("a plain typed cache synced over an object that does not decode: the test stores nothing that fails")
	}
	// The operator's own cache syncs, and holds a stand-in.
	scoped, err := cache.New(cfg, cache.Options{Scheme: k8sClient.Scheme(), NewInformer: reconcileutil.CacheOptions(cfg).NewInformer})
	testkit.Must(t, err)
	if !syncWithin(t, scoped, &v1.BindZone{}, 30*time.Second) || !syncWithin(t, scoped, &v1.BindCluster{}, 30*time.Second) {
		t.Fatal("the operator's cache did not sync over an object that does not decode")
	}
	var zones v1.BindZoneList
	testkit.Must(t, scoped.List(ctx, &zones, client.InNamespace(f.ns)))
	f.g.Expect(zones.Items).To(ContainElements(
		HaveField("Name", "good"),
		And(HaveField("Name", "legacy"), HaveField("Spec.ZoneName", v1.DomainName("legacy.example"))),
	), "the stand-in keeps what decodes")

	// The cluster's reconciler reports it (this suite runs no BindZone
	// reconciler: the zone is seen through the gauge and the render).
	const why = "does not fit this version's schema (spec.transferKeyRef: json: cannot unmarshal"
	f.g.Eventually(func(g Gomega) []corev1.Event {
		var events corev1.EventList
		g.Expect(k8sClient.List(ctx, &events, client.InNamespace(f.ns))).To(Succeed())
		return events.Items
	}).Should(ContainElement(And(
		HaveField("Reason", v1.ReasonInvalid), HaveField("Type", corev1.EventTypeWarning),
		HaveField("InvolvedObject.Name", "legacy"), HaveField("InvolvedObject.Kind", "BindCluster"),
		HaveField("Message", And(ContainSubstring(why), ContainSubstring("bind-operator import --from-manifests"))),
	)))
	f.g.Eventually(func(g Gomega) {
		// A typed read fails on it as the cache would: read the status alone.
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1.GroupVersion.WithKind("BindCluster"))
		g.Expect(k8sClient.Get(ctx, f.key("legacy"), u)).To(Succeed())
		var status v1.BindClusterStatus
		st, _, _ := unstructured.NestedMap(u.Object, "status")
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(st, &status)).To(Succeed())
		ready := meta.FindStatusCondition(status.Conditions, v1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1.ReasonInvalid))
		g.Expect(ready.Message).To(ContainSubstring(why))
		g.Expect(invalidCount(g, "BindCluster")).To(BeNumerically(">=", 1))
		g.Expect(invalidCount(g, "BindZone")).To(BeNumerically(">=", 1), "the zone: what is left of it (a secondary without primaries) would make named-checkconf refuse the cluster's configuration")
	}).Should(Succeed())
	err = k8sClient.Get(ctx, f.key("legacy"), &appsv1.StatefulSet{})
	f.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is created for a cluster that does not decode: %v", err)
	f.settle()
	f.g.Eventually(func(g Gomega) {
		conf := f.namedConf(g)
		g.Expect(conf).To(ContainSubstring(`zone "good.example"`))
		g.Expect(conf).NotTo(ContainSubstring("legacy.example"))
		g.Expect(meta.IsStatusConditionTrue(f.getCluster().Status.Conditions, v1.ConditionConfigValid)).To(BeTrue())
	}).Should(Succeed())

	// Converted as docs/migrating.md says (export, import
	// --from-manifests, kubectl apply: a JSON merge patch for a custom
	// resource), the zone is served.
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(v1.GroupVersion.WithKind("BindZone"))
	testkit.Must(t, k8sClient.Get(ctx, f.key("legacy"), stored))
	exported, err := yaml.Marshal(stored.Object)
	testkit.Must(t, err)
	res, err := importer.ConvertManifests("export.yaml", exported)
	testkit.Must(t, err)
	f.g.Expect(res.Objects).To(HaveLen(1))
	f.g.Expect(res.Report.Omitted()).To(BeZero(), "%v", res.Report.Findings)
	spec, err := json.Marshal(map[string]any{"spec": res.Objects[0].(*v1.BindZone).Spec})
	testkit.Must(t, err)
	testkit.Must(t, k8sClient.Patch(ctx, stored, client.RawPatch(types.MergePatchType, spec)))
	f.g.Eventually(func(g Gomega) {
		g.Expect(f.namedConf(g)).To(ContainSubstring(`zone "legacy.example"`))
		g.Expect(meta.IsStatusConditionTrue(f.getCluster().Status.Conditions, v1.ConditionConfigValid)).To(BeTrue())
	}).Should(Succeed())

	// Deleted, the cluster leaves the gauge: nothing holds it.
	testkit.Must(t, k8sClient.Delete(ctx, &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "legacy"}}))
}

// syncWithin starts c's informer for obj and says whether it synced
// within d.
func syncWithin(t *testing.T, c cache.Cache, obj client.Object, d time.Duration) bool {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = c.Start(cctx) }()
	wctx, wcancel := context.WithTimeout(cctx, d)
	defer wcancel()
	inf, err := c.GetInformer(wctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return false
	}
	for !inf.HasSynced() {
		select {
		case <-wctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// withAnySpec runs f while the CRDs named (plural) accept any spec, as an
// earlier schema of the same version did, and puts them back after.
func withAnySpec(t *testing.T, plurals []string, f func()) {
	t.Helper()
	s := runtime.NewScheme()
	testkit.Must(t, apiextensionsv1.AddToScheme(s))
	c, err := client.New(cfg, client.Options{Scheme: s})
	testkit.Must(t, err)
	var originals []*apiextensionsv1.CustomResourceDefinition
	restore := func() {
		for _, o := range originals {
			var cur apiextensionsv1.CustomResourceDefinition
			testkit.Must(t, c.Get(ctx, client.ObjectKeyFromObject(o), &cur))
			cur.Spec.Versions = o.Spec.Versions
			testkit.Must(t, c.Update(ctx, &cur))
		}
		originals = nil
	}
	t.Cleanup(restore)
	preserve := true
	for _, p := range plurals {
		var crd apiextensionsv1.CustomResourceDefinition
		testkit.Must(t, c.Get(ctx, client.ObjectKey{Name: p + "." + v1.GroupVersion.Group}, &crd))
		originals = append(originals, crd.DeepCopy())
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].SelectableFields = nil
			props := crd.Spec.Versions[i].Schema.OpenAPIV3Schema
			props.XValidations = nil
			spec := props.Properties["spec"]
			props.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve, Description: spec.Description}
		}
		testkit.Must(t, c.Update(ctx, &crd))
	}
	f()
	restore()
}
