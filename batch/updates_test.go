package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/dnsclient"
)

// fakeServer is an applyFunc whose UPDATEs stay in flight until released,
// recording each batch's size per zone.
type fakeServer struct {
	mu      sync.Mutex
	sizes   map[string][]int
	gate    chan struct{} // nil: answer at once
	started chan string   // zone of each UPDATE as it starts
	fail    func(zone string, changes []dnsclient.Change) (dnsclient.BatchResult, error)
}

func newFakeServer(gated bool) *fakeServer {
	f := &fakeServer{sizes: map[string][]int{}, started: make(chan string, 100)}
	if gated {
		f.gate = make(chan struct{})
	}
	return f
}

func (f *fakeServer) apply(ctx context.Context, _ Server, zone string, changes []dnsclient.Change) (dnsclient.BatchResult, error) {
	f.mu.Lock()
	f.sizes[zone] = append(f.sizes[zone], len(changes))
	f.mu.Unlock()
	f.started <- zone
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return dnsclient.BatchResult{}, ctx.Err()
		}
	}
	if f.fail != nil {
		return f.fail(zone, changes)
	}
	return dnsclient.BatchResult{Applied: len(changes), Messages: 1}, nil
}

func (f *fakeServer) batches(zone string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sizes[zone])
}

func change(i int) dnsclient.Change {
	return dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{Name: fmt.Sprintf("h%d.example.", i)}}
}

// waitQueued waits (5 s at most) until zone's lane holds n changes waiting.
func waitQueued(t *testing.T, b *updateBatcher, zone string, n int) {
	t.Helper()
	NewWithT(t).Eventually(func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		got := 0
		for k, l := range b.lanes {
			if k.zone == zone {
				for _, bt := range l.queued {
					got += len(bt.changes)
				}
			}
		}
		return got
	}).WithTimeout(5*time.Second).WithPolling(time.Millisecond).Should(Equal(n), "changes of %s queued", zone)
}

func waitStarted(t *testing.T, f *fakeServer, zone string) {
	t.Helper()
	select {
	case z := <-f.started:
		if z != zone {
			t.Fatalf("UPDATE of %s started, want %s", z, zone)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no UPDATE of %s started", zone)
	}
}

// submitAll submits changes from n goroutines and returns their errors once
// all came back.
func submitAll(ctx context.Context, b *updateBatcher, zone string, from, n int) <-chan []error {
	out := make(chan []error, 1)
	go func() {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = b.Submit(ctx, Server{Addr: "server"}, zone, change(from+i)) })
		}
		wg.Wait()
		out <- errs
	}()
	return out
}

// One change on an idle zone goes alone at once; the 100 that arrive while
// it is in flight go together in the next UPDATE, split at max.
func TestUpdateBatcherGroupCommit(t *testing.T) {
	f := newFakeServer(true)
	b := newUpdateBatcher(0, 40, f.apply)
	ctx := context.Background()

	first := submitAll(ctx, b, "z.", 0, 1)
	waitStarted(t, f, "z.")
	rest := submitAll(ctx, b, "z.", 1, 100)
	waitQueued(t, b, "z.", 100)
	close(f.gate)
	for _, ch := range []<-chan []error{first, rest} {
		for _, err := range <-ch {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := f.batches("z."), []int{1, 40, 40, 20}; !slices.Equal(got, want) {
		t.Errorf("batches %v, want %v", got, want)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.lanes) != 0 {
		t.Errorf("%d lanes left after the zone went idle", len(b.lanes))
	}
}

// Zones do not wait for each other.
func TestUpdateBatcherZonesIndependent(t *testing.T) {
	f := newFakeServer(true)
	b := newUpdateBatcher(0, 500, f.apply)
	a := submitAll(context.Background(), b, "a.", 0, 1)
	waitStarted(t, f, "a.")
	z := submitAll(context.Background(), b, "b.", 0, 1)
	waitStarted(t, f, "b.") // while a.'s UPDATE is still in flight
	close(f.gate)
	<-a
	<-z
}

// Each caller gets its own change's error; a cut-short run fails every
// change of its batch, and the next batch is unaffected.
func TestUpdateBatcherErrorsStayWithTheirChange(t *testing.T) {
	f := newFakeServer(false)
	refused := errors.New("YXRRSET")
	transport := errors.New("connection reset")
	calls := 0
	f.fail = func(_ string, changes []dnsclient.Change) (dnsclient.BatchResult, error) {
		calls++
		if calls == 1 {
			return dnsclient.BatchResult{Applied: len(changes) - 1, Failed: []dnsclient.ChangeError{{Index: 1, Err: refused}}}, nil
		}
		return dnsclient.BatchResult{}, transport
	}
	b := newUpdateBatcher(0, 500, f.apply)
	ctx := context.Background()
	errs := b.SubmitMany(ctx, Server{Addr: "server"}, "z.", []dnsclient.Change{change(0), change(1), change(2)})
	if errs[0] != nil || !errors.Is(errs[1], refused) || errs[2] != nil {
		t.Errorf("errors %v, want only the second refused", errs)
	}
	errs = b.SubmitMany(ctx, Server{Addr: "server"}, "z.", []dnsclient.Change{change(3), change(4)})
	for i, err := range errs {
		if !errors.Is(err, ErrAborted) || !errors.Is(err, transport) {
			t.Errorf("change %d: %v, want the aborted batch's error", i, err)
		}
	}
}

// A caller that gives up returns at once; its change still goes out and
// the lane retires.
func TestUpdateBatcherCallerCancels(t *testing.T) {
	f := newFakeServer(true)
	b := newUpdateBatcher(0, 500, f.apply)
	ctx, cancel := context.WithCancel(context.Background())
	done := submitAll(ctx, b, "z.", 0, 1)
	waitStarted(t, f, "z.")
	cancel()
	if errs := <-done; !errors.Is(errs[0], context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", errs[0])
	}
	close(f.gate)
	NewWithT(t).Eventually(func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.lanes)
	}).WithTimeout(5*time.Second).WithPolling(time.Millisecond).Should(BeZero(), "the lane never retired")
}

// A change lingers for company only inside a burst: the first change, and
// one that comes burstGap or more after the previous, goes at once; one
// that comes sooner waits linger.
func TestUpdateBatcherLingersOnlyInABurst(t *testing.T) {
	f := newFakeServer(false)
	b := newUpdateBatcher(2*time.Millisecond, 40, f.apply)
	now := time.Unix(1_800_000_000, 0)
	b.clock = func() time.Time { return now }
	var mu sync.Mutex
	var slept []time.Duration
	b.sleep = func(d time.Duration) {
		mu.Lock()
		slept = append(slept, d)
		mu.Unlock()
	}
	ctx := context.Background()
	submit := func(i int) {
		t.Helper()
		if err := b.Submit(ctx, Server{Addr: "server"}, "z.", change(i)); err != nil {
			t.Fatal(err)
		}
	}
	submit(0) // the first: alone
	now = now.Add(burstGap / 2)
	submit(1) // close behind it: a burst
	now = now.Add(burstGap)
	submit(2) // alone again
	mu.Lock()
	defer mu.Unlock()
	if want := []time.Duration{2 * time.Millisecond}; !slices.Equal(slept, want) {
		t.Errorf("lingered %v, want %v (only the change inside the burst)", slept, want)
	}
	if got := f.batches("z."); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("batches %v, want three of one", got)
	}
}
