package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/recordindex"
)

// TestRivalsOfLeaveOutTheRecordItself: a record being deleted wakes the
// other records of its zone at its name, in any namespace, and not
// itself (a second reconcile of its own would delete its data twice).
func TestRivalsOfLeaveOutTheRecordItself(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	rec := func(ns, name, owner, typ string) *bindv1alpha1.DNSRecord {
		return &bindv1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Name: "example", Namespace: "dns"},
				Name: bindv1alpha1.RecordName(owner), Type: bindv1alpha1.RecordType(typ)},
		}
	}
	going := rec("dns", "www", "www", "A")
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&bindv1alpha1.DNSRecord{}, recordindex.ByZoneName, func(o client.Object) []string {
			return []string{recordindex.Of(o.(*bindv1alpha1.DNSRecord))}
		}).
		WithObjects(going,
			rec("dns", "www-later", "www", "A"),   // lost the claim to it
			rec("team", "www-txt", "WWW.", "TXT"), // another namespace, another type, same name
			rec("dns", "api", "api", "A"),         // another name
		).Build()
	g.Expect(rivalsOf(context.Background(), c, going)).To(ConsistOf(
		reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "dns", Name: "www-later"}},
		reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "www-txt"}},
	))
}
