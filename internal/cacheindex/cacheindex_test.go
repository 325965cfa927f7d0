package cacheindex

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// informers hands out one informer, as a manager's cache does, and lists
// and indexes with reader; the other methods of cache.Cache are not
// called.
type informers struct {
	cache.Cache
	informer cache.Informer
	reader   client.Reader
	indexed  []string
}

func (i *informers) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return i.informer, nil
}

func (i *informers) IndexField(_ context.Context, _ client.Object, name string, _ client.IndexerFunc) error {
	i.indexed = append(i.indexed, name)
	return nil
}

func (i *informers) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return i.reader.List(ctx, list, opts...)
}

func newList() client.ObjectList { return &corev1.ConfigMapList{} }

func app(c *corev1.ConfigMap) []string { return []string{c.Labels["app"]} }

func configMap(ns, name, app string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
}

// listed is an informer that has listed everything (its store is filled
// by hand).
type listed struct{ SharedIndexInformer }

func (listed) HasSynced() bool { return true }

// TestGetHandsOutTheCachesObjects: the objects of a value, from every
// namespace, each value kept once, and the cache's own pointers (no copy:
// that is the point of the package).
func TestGetHandsOutTheCachesObjects(t *testing.T) {
	g := NewWithT(t)
	shared := listed{toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, toolscache.Indexers{})}
	idx, err := Add(context.Background(), &informers{informer: shared}, &corev1.ConfigMap{}, newList, "app", app)
	g.Expect(err).NotTo(HaveOccurred())
	a, b, other := configMap("one", "a", "web"), configMap("two", "b", "web"), configMap("one", "c", "db")
	for _, o := range []any{a, b, other, toolscache.DeletedFinalStateUnknown{Key: "one/gone", Obj: a}} {
		g.Expect(shared.GetIndexer().Add(o)).To(Succeed())
	}

	web, err := idx.Get(context.Background(), "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(web).To(ConsistOf(BeIdenticalTo(a), BeIdenticalTo(b)))
	g.Expect(idx.Get(context.Background(), "none")).To(BeEmpty())
	g.Expect(shared.GetIndexer().ListIndexFuncValues("app")).To(ConsistOf("web", "db"))
}

// TestGetWaitsForTheInformer: before the informer has listed, Get waits,
// and gives up with the caller's context, never answering "nothing".
func TestGetWaitsForTheInformer(t *testing.T) {
	g := NewWithT(t)
	shared := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	idx, err := OnInformer(shared, "app", app)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(shared.GetIndexer().Add(configMap("one", "a", "web"))).To(Succeed())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = idx.Get(ctx, "web")
	g.Expect(err).To(MatchError(ContainSubstring("index app: the cache has not synced yet")))
}

// perNamespace stands for controller-runtime's informer of a cache of
// several namespaces: not a client-go SharedIndexInformer.
type perNamespace struct{ cache.Informer }

// TestOtherInformersFallBackToAFieldIndex: a cache that keeps an
// informer per namespace has no one store to read; the index is then a
// field index of the same name, listed across namespaces.
func TestOtherInformersFallBackToAFieldIndex(t *testing.T) {
	g := NewWithT(t)
	a, b, other := configMap("one", "a", "web"), configMap("two", "b", "web"), configMap("one", "c", "db")
	reader := fake.NewClientBuilder().WithObjects(a, b, other).
		WithIndex(&corev1.ConfigMap{}, "app", func(o client.Object) []string { return app(o.(*corev1.ConfigMap)) }).Build()
	c := &informers{informer: perNamespace{}, reader: reader}
	idx, err := Add(context.Background(), c, &corev1.ConfigMap{}, newList, "app", app)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.indexed).To(Equal([]string{"app"}))

	web, err := idx.Get(context.Background(), "web")
	g.Expect(err).NotTo(HaveOccurred())
	names := []string{}
	for _, cm := range web {
		names = append(names, cm.Namespace+"/"+cm.Name)
	}
	g.Expect(names).To(ConsistOf("one/a", "two/b"))
}
