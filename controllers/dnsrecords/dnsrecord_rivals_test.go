package dnsrecords

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/recordindex"
)

// TestRivalsOfLeaveOutTheRecordItself: a deleted record whose data is gone wakes the
// other records of its zone at its name, in any namespace, and not
// itself (a second reconcile of its own would delete its data twice).
func TestRivalsOfLeaveOutTheRecordItself(t *testing.T) {
	g := NewWithT(t)
	rec := func(ns, name, owner, typ string) *bindv1alpha1.DNSRecord {
		return &bindv1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Name: "example", Namespace: "dns"},
				Name: bindv1alpha1.RecordName(owner), Type: bindv1alpha1.RecordType(typ)},
		}
	}
	going := rec("dns", "www", "www", "A")
	informer := listed{toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &bindv1alpha1.DNSRecord{}, 0, toolscache.Indexers{})}
	names, err := recordindex.OnInformer(informer, recordindex.ByZoneName)
	g.Expect(err).NotTo(HaveOccurred())
	for _, r := range []*bindv1alpha1.DNSRecord{going,
		rec("dns", "www-later", "www", "A"),   // lost the claim to it
		rec("team", "www-txt", "WWW.", "TXT"), // another namespace, another type, same name
		rec("dns", "api", "api", "A"),         // another name
	} {
		g.Expect(informer.GetIndexer().Add(r)).To(Succeed())
	}
	g.Expect(rivalsOf(context.Background(), names, going)).To(ConsistOf(
		reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "dns", Name: "www-later"}},
		reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "www-txt"}},
	))
}

// listed is an informer that has listed everything (its store is filled
// by hand).
type listed struct{ toolscache.SharedIndexInformer }

func (listed) HasSynced() bool { return true }
