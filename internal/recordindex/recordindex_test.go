package recordindex

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestKey(t *testing.T) {
	zone := types.NamespacedName{Namespace: "dns", Name: "example"}
	r := &v1alpha1.DNSRecord{}
	r.Namespace = "team"
	r.Spec.ZoneRef = v1alpha1.ZoneReference{Name: "example", Namespace: "dns"}
	r.Spec.Name = "WWW."
	if got, want := Of(r), Key(zone, "www"); got != want {
		t.Errorf("Of = %q, want %q (case and trailing dot folded)", got, want)
	}
}

// informers hands out one client-go informer, as a manager's cache does.
type informers struct {
	cache.Cache
	informer cache.Informer
}

func (i *informers) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return i.informer, nil
}

// listed is an informer that has listed everything (its store is filled
// by hand).
type listed struct{ toolscache.SharedIndexInformer }

func (listed) HasSynced() bool { return true }

// TestIndexesOnce: the webhooks and the DNSRecord and BindZone
// controllers ask for the indexes of one cache and each gets the same
// ones (adding an index twice to an informer is an error); each index
// finds its records in every namespace.
func TestIndexesOnce(t *testing.T) {
	ctx := context.Background()
	shared := listed{toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &v1alpha1.DNSRecord{}, 0, toolscache.Indexers{})}
	c := &informers{informer: shared}
	for _, get := range []func(context.Context, cache.Cache) (*Index, error){Names, Zones} {
		first, err := get(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if second, err := get(ctx, c); err != nil || second != first {
			t.Fatalf("second call = %p, %v; want the first index %p", second, err, first)
		}
	}
	r := &v1alpha1.DNSRecord{}
	r.Namespace, r.Name = "team", "www"
	r.Spec.ZoneRef = v1alpha1.ZoneReference{Name: "example", Namespace: "dns"}
	r.Spec.Name = "WWW"
	if err := shared.GetIndexer().Add(r); err != nil {
		t.Fatal(err)
	}
	zone := types.NamespacedName{Namespace: "dns", Name: "example"}
	names, _ := Names(ctx, c)
	zones, _ := Zones(ctx, c)
	for what, got := range map[string]func() ([]*v1alpha1.DNSRecord, error){
		"the zone's records":     func() ([]*v1alpha1.DNSRecord, error) { return zones.Get(ctx, Zone(zone)) },
		"the zone's www records": func() ([]*v1alpha1.DNSRecord, error) { return names.Get(ctx, Key(zone, "www.")) },
	} {
		if recs, err := got(); err != nil || len(recs) != 1 || recs[0] != r {
			t.Errorf("%s = %v, %v; want the record of namespace team", what, recs, err)
		}
	}
}
