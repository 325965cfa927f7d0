package controllers

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// enqueueAfter is handler.EnqueueRequestsFromMapFunc with a delay: the
// requests an event maps to are reconciled after settle, and the events
// that map to the same request meanwhile are reconciled with it (the queue
// keeps one entry per request, at the earliest time asked). For
// reconciles that cost O(n) in the watched objects, where one per burst
// of changes is enough. An update maps both the old and the new object,
// as EnqueueRequestsFromMapFunc does, so a moved reference refreshes both.
func enqueueAfter(settle time.Duration, fn func(client.Object) []reconcile.Request) handler.EventHandler {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		for _, o := range objs {
			for _, req := range fn(o) {
				q.AddAfter(req, settle)
			}
		}
	}
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
