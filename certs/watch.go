package certs

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchNamed pokes the trigger whenever the one named object in list's kind
// changes, re-opening the watch when the server closes it. A field selector
// on metadata.name keeps the RBAC grant to that name (resourceNames apply to
// list and watch requests that select a single name).
func watchNamed(ctx context.Context, c client.WithWatch, newList func() client.ObjectList, namespace, name string, trigger chan<- struct{}) {
	backoff := time.Second
	for ctx.Err() == nil {
		opts := []client.ListOption{client.MatchingFields{"metadata.name": name}}
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		w, err := c.Watch(ctx, newList(), opts...)
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		opened := time.Now()
		for range w.ResultChan() {
			poke(trigger)
		}
		w.Stop()
		// The watch may have missed events while it was down.
		poke(trigger)
		if time.Since(opened) > time.Minute {
			backoff = time.Second
			continue
		}
		// A watch that keeps closing at once (forbidden, bad selector) must
		// not turn into a busy loop.
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// poke never blocks: one pending trigger is as good as many.
func poke(trigger chan<- struct{}) {
	select {
	case trigger <- struct{}{}:
	default:
	}
}
