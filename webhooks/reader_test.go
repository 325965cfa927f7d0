package webhooks

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestCacheFirst(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "ns", Name: name} }
	// The cache holds a stale copy of "old" and has not seen "new" yet;
	// the API server has both, and the only Pod.
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&v1alpha1.BindZone{ObjectMeta: meta("old"), Spec: v1alpha1.BindZoneSpec{ZoneName: "cached.example"}},
	).Build()
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&v1alpha1.BindZone{ObjectMeta: meta("old"), Spec: v1alpha1.BindZoneSpec{ZoneName: "api.example"}},
		&v1alpha1.BindZone{ObjectMeta: meta("new"), Spec: v1alpha1.BindZoneSpec{ZoneName: "new.example"}},
		&corev1.Pod{ObjectMeta: meta("pod")},
	).Build()
	r := cacheFirst{cache: cache, api: api, scheme: scheme}
	ctx := context.Background()

	var z v1alpha1.BindZone
	if err := r.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "old"}, &z); err != nil || z.Spec.ZoneName != "cached.example" {
		t.Errorf("a cached zone must come from the cache: %v %q", err, z.Spec.ZoneName)
	}
	if err := r.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "new"}, &z); err != nil || z.Spec.ZoneName != "new.example" {
		t.Errorf("a zone the cache has not seen must come from the API server: %v %q", err, z.Spec.ZoneName)
	}
	if err := r.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "gone"}, &z); err == nil {
		t.Error("a zone neither has must be NotFound")
	}
	var p corev1.Pod
	if err := r.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "pod"}, &p); err != nil {
		t.Errorf("Pods must come from the API server: %v", err)
	}
	var zones v1alpha1.BindZoneList
	if err := r.List(ctx, &zones); err != nil || len(zones.Items) != 2 {
		t.Errorf("List must ask the API server: %v, %d zones", err, len(zones.Items))
	}
}
