package controllers

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

var seq atomic.Int64

// fixture is a namespace holding an authoritative cluster with a transfer
// key, an ACL in allowQuery, a catalog zone and a primary zone.
type fixture struct {
	t       *testing.T
	ns      string
	cluster *v1.BindCluster
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ctrl-%d", seq.Add(1))}}
	must(t, k8sClient.Create(ctx, ns))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, ns) })
	f := &fixture{t: t, ns: ns.Name}

	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "transfer-tsig"},
		Data:       map[string][]byte{v1.TSIGSecretKey: []byte("c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I=")},
	})
	f.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "transfer"}, Spec: v1.BindTSIGKeySpec{Algorithm: "hmac-sha256"}})
	f.create(&v1.BindACL{ObjectMeta: metav1.ObjectMeta{Name: "clients"}, Spec: v1.BindACLSpec{
		Entries: []v1.AddressMatchElement{{Address: "198.18.0.0/15"}, {Builtin: "localhost"}},
	}})
	f.cluster = &v1.BindCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: v1.BindClusterSpec{
			Mode:           v1.ModeAuthoritative,
			Replicas:       ptr[int32](3),
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
	must(f.t, k8sClient.Create(ctx, obj))
}

func (f *fixture) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: f.ns, Name: name}
}

// statefulSet waits (bounded) until the StatefulSet exists with a hash.
func (f *fixture) statefulSet() *appsv1.StatefulSet {
	f.t.Helper()
	var sts appsv1.StatefulSet
	f.eventually("the StatefulSet with a config hash", func() (bool, error) {
		err := k8sClient.Get(ctx, f.key("dns"), &sts)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && sts.Spec.Template.Annotations[v1.AnnotationConfigHash] != "", err
	})
	return &sts
}

func (f *fixture) hash() string {
	return f.statefulSet().Spec.Template.Annotations[v1.AnnotationConfigHash]
}

func (f *fixture) getCluster() *v1.BindCluster {
	f.t.Helper()
	var c v1.BindCluster
	must(f.t, k8sClient.Get(ctx, f.key("dns"), &c))
	return &c
}

// eventually polls cond every 100ms for at most 20s.
func (f *fixture) eventually(what string, cond func() (bool, error)) {
	f.t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		f.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// settle waits until the hash has stayed the same for a second, i.e. the
// watches have nothing left to re-render, and returns it.
func (f *fixture) settle() string {
	f.t.Helper()
	last, since := f.hash(), time.Now()
	f.eventually("the config hash to settle", func() (bool, error) {
		h := f.hash()
		if h != last {
			last, since = h, time.Now()
		}
		return time.Since(since) > time.Second, nil
	})
	return last
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

func clientInNamespace(ns string) client.InNamespace { return client.InNamespace(ns) }

// updateLatest re-reads obj and applies edit until the update goes through:
// the controllers patch status concurrently, so a plain read-modify-write
// can meet a conflict that says nothing about the behaviour under test.
func updateLatest[T client.Object](t *testing.T, key client.ObjectKey, obj T, edit func(T)) {
	t.Helper()
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(ctx, key, obj); err != nil {
			return err
		}
		edit(obj)
		return k8sClient.Update(ctx, obj)
	}))
}
