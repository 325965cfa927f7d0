package cel

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// createCase is one row of a Gateway-API-style table: start from a valid
// base object, mutate it, and create it. An empty wantErrors means the
// object must be accepted; otherwise every string must appear in the error.
type createCase[T client.Object] struct {
	desc       string
	mutate     func(T)
	wantErrors []string
}

// updateCase creates the base object, then applies mutate as an update.
type updateCase[T client.Object] struct {
	desc       string
	mutate     func(T)
	wantErrors []string
}

var nameSeq atomic.Int64

// newNamespace creates a namespace for one test function.
func newNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cel-"}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, ns) })
	return ns.Name
}

func prepare[T client.Object](base func() T, ns string) T {
	obj := base()
	obj.SetNamespace(ns)
	if obj.GetName() == "" {
		obj.SetName(fmt.Sprintf("obj-%d", nameSeq.Add(1)))
	}
	return obj
}

func runCreateCases[T client.Object](t *testing.T, base func() T, cases []createCase[T]) {
	t.Helper()
	ns := newNamespace(t)
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			obj := prepare(base, ns)
			if tc.mutate != nil {
				tc.mutate(obj)
			}
			err := k8sClient.Create(ctx, obj)
			checkErr(t, err, tc.wantErrors)
			if err == nil {
				_ = k8sClient.Delete(ctx, obj)
			}
		})
	}
}

func runUpdateCases[T client.Object](t *testing.T, base func() T, cases []updateCase[T]) {
	t.Helper()
	ns := newNamespace(t)
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			obj := prepare(base, ns)
			if err := k8sClient.Create(ctx, obj); err != nil {
				t.Fatalf("creating the base object: %v", err)
			}
			defer func() { _ = k8sClient.Delete(ctx, obj) }()
			tc.mutate(obj)
			checkErr(t, k8sClient.Update(ctx, obj), tc.wantErrors)
		})
	}
}

func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("expected the object to be accepted, got: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("expected a rejection containing %q, but the object was accepted", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%v", w, err)
		}
	}
}
