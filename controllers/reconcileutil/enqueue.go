package reconcileutil

import (
	"context"
	"maps"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// EnqueueAfter is handler.EnqueueRequestsFromMapFunc with a delay: the
// requests an event maps to are reconciled after settle, and the events
// that map to the same request meanwhile are reconciled with it (the queue
// keeps one entry per request, at the earliest time asked). For
// reconciles that cost O(n) in the watched objects, where one per burst
// of changes is enough. An update maps both the old and the new object,
// as EnqueueRequestsFromMapFunc does, so a moved reference refreshes both.
func EnqueueAfter(settle time.Duration, fn func(client.Object) []reconcile.Request) handler.EventHandler {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		for _, o := range objs {
			for _, req := range fn(o) {
				q.AddAfter(req, settle)
			}
		}
	}
	return eachObject(add)
}

// EnqueueThrottled is EnqueueAfter with a leading edge: the first event
// for a request is reconciled at once and opens a window; the events for
// it within the window are reconciled together when the window ends. For
// reconciles that cost O(n) in the watched objects and that a single
// change should not wait for. Each request keeps an entry until its
// window has ended and the entries have grown enough to be swept.
func EnqueueThrottled(window time.Duration, clk clock.PassiveClock, fn func(client.Object) []reconcile.Request) handler.EventHandler {
	var mu sync.Mutex
	open := map[reconcile.Request]time.Time{} // when the request's window ends
	// prune is the size at which the ended windows are dropped; it grows
	// with what stays open, so dropping costs O(1) per event amortised.
	prune := throttledEntries
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		for _, o := range objs {
			for _, req := range fn(o) {
				now := clk.Now()
				mu.Lock()
				end, inWindow := open[req]
				inWindow = inWindow && now.Before(end)
				if !inWindow {
					open[req] = now.Add(window)
					if len(open) > prune {
						maps.DeleteFunc(open, func(_ reconcile.Request, end time.Time) bool { return !now.Before(end) })
						prune = max(throttledEntries, 2*len(open))
					}
				}
				mu.Unlock()
				if inWindow {
					q.AddAfter(req, end.Sub(now))
				} else {
					q.Add(req)
				}
			}
		}
	}
	return eachObject(add)
}

// throttledEntries is how many windows EnqueueThrottled keeps at least
// before it drops the ended ones.
const throttledEntries = 1024

// eachObject is a handler that gives add the object of every event, and
// both objects of an update.
func eachObject(add func(workqueue.TypedRateLimitingInterface[reconcile.Request], ...client.Object)) handler.Funcs {
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object)
		},
	}
}
