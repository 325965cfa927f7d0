package reconcileutil

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// A burst of events for one request is reconciled once, after the settle
// time, and not before; a moved reference refreshes the old target too.
func TestEnqueueAfterCoalesces(t *testing.T) {
	g := NewWithT(t)
	clock, q := fakeClockQueue(t)
	h := EnqueueAfter(2*time.Second, func(o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: o.GetLabels()["catalog"]}}}
	})
	zone := func(catalog string) *bindv1alpha1.BindZone {
		z := &bindv1alpha1.BindZone{}
		z.Namespace, z.Labels = "ns", map[string]string{"catalog": catalog}
		return z
	}
	ctx := context.Background()
	for range 3 {
		h.Create(ctx, event.CreateEvent{Object: zone("a")}, q)
	}
	h.Update(ctx, event.UpdateEvent{ObjectOld: zone("a"), ObjectNew: zone("b")}, q)
	g.Consistently(q.Len).WithTimeout(100*time.Millisecond).Should(BeZero(), "nothing before the settle time")

	clock.Step(2 * time.Second)
	g.Eventually(q.Len).Should(Equal(2), "one request per catalog")
	got := map[string]bool{}
	for range 2 {
		req, _ := q.Get()
		got[req.Name] = true
		q.Done(req)
	}
	g.Expect(got).To(Equal(map[string]bool{"a": true, "b": true}))
}

// The first event for a request is reconciled at once; the ones within
// its window once, when the window ends; an event after the window is
// reconciled at once again.
func TestEnqueueThrottledLeadsThenCoalesces(t *testing.T) {
	g := NewWithT(t)
	clock, q := fakeClockQueue(t)
	h := EnqueueThrottled(time.Second, clock, func(o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "zone"}}}
	})
	ctx := context.Background()
	record := &bindv1alpha1.DNSRecord{}
	take := func(what string) {
		t.Helper()
		g.Eventually(q.Len).Should(Equal(1), what)
		req, _ := q.Get()
		q.Done(req)
	}

	h.Create(ctx, event.CreateEvent{Object: record}, q)
	take("the first event, at once")
	for range 3 {
		clock.Step(100 * time.Millisecond)
		h.Create(ctx, event.CreateEvent{Object: record}, q)
	}
	g.Consistently(q.Len).WithTimeout(100*time.Millisecond).Should(BeZero(), "nothing more within the window")
	clock.Step(700 * time.Millisecond)
	take("the window's events, once, when it ends")
	g.Consistently(q.Len).WithTimeout(100 * time.Millisecond).Should(BeZero())

	clock.Step(5 * time.Second)
	h.Delete(ctx, event.DeleteEvent{Object: record}, q)
	take("an event after the window, at once")
}

// fakeClockQueue is a controller's work queue on a fake clock, shut down
// when the test ends.
func fakeClockQueue(t *testing.T) (*clocktesting.FakeClock, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	clock := clocktesting.NewFakeClock(time.Unix(1000, 0))
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clock})
	t.Cleanup(q.ShutDown)
	return clock, q
}
