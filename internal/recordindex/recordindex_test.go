package recordindex

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// countingIndexer counts the indexes added to it.
type countingIndexer struct{ n int }

func (c *countingIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	c.n++
	return nil
}

// TestRegisterOnce: the webhooks and the controllers both register the
// index in one manager; the cache takes it once (a second IndexField of
// one name is an error).
func TestRegisterOnce(t *testing.T) {
	a, b := &countingIndexer{}, &countingIndexer{}
	for _, ix := range []*countingIndexer{a, a, b} {
		if err := Register(context.Background(), ix); err != nil {
			t.Fatal(err)
		}
	}
	if a.n != 1 || b.n != 1 {
		t.Errorf("IndexField calls: %d and %d, want 1 each", a.n, b.n)
	}
}

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
