// Package cacheindex reads the objects of a manager's cache by an index
// of its own, without copying them.
//
// controller-runtime's field indexes are read with client.List, which
// copies every object it returns into the list's Items, by value, even
// with UnsafeDisableDeepCopy: listing the 10,000 DNSRecords of one zone
// allocated about 5 MiB each time (a DNSRecord is a 488-byte struct), twice
// a second while they were created, and that garbage set the manager's
// peak (issue 15, item 4). A field index also keeps every value twice, for
// its namespace and for all namespaces. An Index here keeps each value
// once and hands out the cache's own objects.
package cacheindex

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncPoll is how often Get looks again at an informer that has not
// synced (only while a manager starts).
const syncPoll = 50 * time.Millisecond

// Index is one index of one kind in a manager's cache.
type Index[T client.Object] struct {
	name string
	// indexer is the informer's store, when the cache is one client-go
	// informer per kind (a manager's default); synced tells whether the
	// informer has listed everything.
	indexer toolscache.Indexer
	synced  func() bool
	// Otherwise (a cache of several namespaces keeps an informer per
	// namespace) the index is a field index, listed with copies.
	reader  client.Reader
	newList func() client.ObjectList
}

// Add adds the index name, whose values for an object are keys(object),
// to c's informer of obj's kind, and returns it; newList makes an empty
// list of that kind. The informer starts with the cache; until then Get
// finds nothing.
func Add[T client.Object](ctx context.Context, c cache.Cache, obj T, newList func() client.ObjectList, name string, keys func(T) []string) (*Index[T], error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", name, err)
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		err := c.IndexField(ctx, obj, name, func(o client.Object) []string { return keys(o.(T)) })
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", name, err)
		}
		return &Index[T]{name: name, reader: c, newList: newList}, nil
	}
	return OnInformer(shared, name, keys)
}

// SharedIndexInformer is client-go's informer, which a manager's cache
// keeps one of per kind.
type SharedIndexInformer = toolscache.SharedIndexInformer

// OnInformer adds the index name to an informer of T's kind and returns
// it.
func OnInformer[T client.Object](shared SharedIndexInformer, name string, keys func(T) []string) (*Index[T], error) {
	err := shared.AddIndexers(toolscache.Indexers{name: func(o any) ([]string, error) {
		t, ok := o.(T)
		if !ok {
			return nil, nil // a tombstone: not indexed
		}
		return keys(t), nil
	}})
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", name, err)
	}
	return &Index[T]{name: name, indexer: shared.GetIndexer(), synced: shared.HasSynced}, nil
}

// Get returns the objects whose keys hold value, in every namespace, in
// no order. They are the cache's own: read them, never change them
// (DeepCopy first). Like a read of the cache, it waits until the informer
// has listed everything, so an empty answer never means "not read yet".
func (i *Index[T]) Get(ctx context.Context, value string) ([]T, error) {
	if i.indexer == nil {
		return i.list(ctx, value)
	}
	if !i.synced() {
		err := wait.PollUntilContextCancel(ctx, syncPoll, true, func(context.Context) (bool, error) { return i.synced(), nil })
		if err != nil {
			return nil, fmt.Errorf("index %s: the cache has not synced yet: %w", i.name, err)
		}
	}
	objs, err := i.indexer.ByIndex(i.name, value)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

func (i *Index[T]) list(ctx context.Context, value string) ([]T, error) {
	list := i.newList()
	if err := i.reader.List(ctx, list, client.MatchingFields{i.name: value}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []T
	err := meta.EachListItem(list, func(o runtime.Object) error {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
		return nil
	})
	return out, err
}
