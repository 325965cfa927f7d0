package controllers

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

var seq atomic.Int64

// fixture is a namespace holding an authoritative cluster with a transfer
// key, an ACL in allowQuery, a catalog zone and a primary zone.
type fixture struct {
	t       *testing.T
	g       *WithT
	ns      string
	cluster *v1.BindCluster
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t)
}

// newFixtureWith creates existing (in the fixture's namespace) before
// anything else.
func newFixtureWith(t *testing.T, existing ...client.Object) *fixture {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ctrl-%d", seq.Add(1))}}
	testkit.Must(t, k8sClient.Create(ctx, ns))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, ns) })
	f := &fixture{t: t, g: NewWithT(t), ns: ns.Name}
	for _, o := range existing {
		f.create(o)
	}

	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "transfer-tsig"},
		Data:       map[string][]byte{v1.TSIGSecretKey: []byte("c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I=")},
	})
	f.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "transfer"}, Spec: v1.BindTSIGKeySpec{Algorithm: "hmac-sha256", ImportExisting: true, SecretName: "transfer-tsig"}})
	f.create(&v1.BindACL{ObjectMeta: metav1.ObjectMeta{Name: "clients"}, Spec: v1.BindACLSpec{
		Entries: []v1.AddressMatchElement{{Address: "198.18.0.0/15"}, {Builtin: "localhost"}},
	}})
	f.cluster = &v1.BindCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: v1.BindClusterSpec{
			Mode:           v1.ModeAuthoritative,
			Replicas:       ptr.To[int32](3),
			TransferKeyRef: &v1.LocalObjectReference{Name: "transfer"},
			AllowQuery:     []v1.AddressMatchElement{{ACLRef: "clients"}},
		},
	}
	f.create(f.cluster)
	f.create(&v1.BindCatalogZone{ObjectMeta: metav1.ObjectMeta{Name: "catalog"}, Spec: v1.BindCatalogZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: "catalog.example.internal",
		TransferKeyRef: v1.LocalObjectReference{Name: "transfer"},
	}})
	f.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "example-com"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: "example.com", Type: v1.ZonePrimary,
		CatalogZoneRef: &v1.LocalObjectReference{Name: "catalog"},
		Records:        []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}},
	}})
	return f
}

func (f *fixture) create(obj client.Object) {
	f.t.Helper()
	obj.SetNamespace(f.ns)
	testkit.Must(f.t, k8sClient.Create(ctx, obj))
}

func (f *fixture) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: f.ns, Name: name}
}

// statefulSet waits (bounded) until the StatefulSet exists with a hash.
func (f *fixture) statefulSet() *appsv1.StatefulSet {
	f.t.Helper()
	var sts *appsv1.StatefulSet
	f.g.Eventually(func(g Gomega) { sts = f.hashedStatefulSet(g) }).Should(Succeed(), "the StatefulSet with a config hash")
	return sts
}

func (f *fixture) hashedStatefulSet(g Gomega) *appsv1.StatefulSet {
	var sts appsv1.StatefulSet
	g.Expect(k8sClient.Get(ctx, f.key("dns"), &sts)).To(Succeed())
	g.Expect(sts.Spec.Template.Annotations).To(HaveKeyWithValue(v1.AnnotationConfigHash, Not(BeEmpty())))
	return &sts
}

func (f *fixture) hash() string {
	return f.statefulSet().Spec.Template.Annotations[v1.AnnotationConfigHash]
}

func (f *fixture) getCluster() *v1.BindCluster {
	f.t.Helper()
	var c v1.BindCluster
	testkit.Must(f.t, k8sClient.Get(ctx, f.key("dns"), &c))
	return &c
}

// settle waits until the hash has stayed the same for a second, i.e. the
// watches have nothing left to re-render, and returns it.
func (f *fixture) settle() string {
	f.t.Helper()
	var h string
	f.g.Eventually(func(g Gomega) {
		h = f.hashedStatefulSet(g).Spec.Template.Annotations[v1.AnnotationConfigHash]
		g.Consistently(func(g Gomega) string {
			return f.hashedStatefulSet(g).Spec.Template.Annotations[v1.AnnotationConfigHash]
		}).WithTimeout(time.Second).Should(Equal(h))
	}).Should(Succeed(), "the config hash to settle")
	return h
}

// updateLatest re-reads obj and applies edit until the update goes through:
// the controllers patch status concurrently, so a plain read-modify-write
// can meet a conflict that says nothing about the behaviour under test.
func updateLatest[T client.Object](t *testing.T, key client.ObjectKey, obj T, edit func(T)) {
	t.Helper()
	testkit.Must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(ctx, key, obj); err != nil {
			return err
		}
		edit(obj)
		return k8sClient.Update(ctx, obj)
	}))
}
