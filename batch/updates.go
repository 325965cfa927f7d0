package batch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/internal/idlecache"
)

// Server is where a zone's UPDATEs go and the key that signs them.
type Server struct {
	// Addr is host:port of the zone's primary.
	Addr string
	// Key signs the UPDATEs; its secret never leaves dnsclient.Key.
	Key dnsclient.Key
	// SignReads signs the queries about the zone with Key too: a zone in a
	// view is reachable only with its view's key. Other zones are read
	// unsigned, so a key named refuses shows as refused records, not as
	// an unreadable zone.
	SignReads bool
}

// ReadKey is the key that signs queries about the zone, nil for none.
func (s Server) ReadKey() *dnsclient.Key {
	if !s.SignReads {
		return nil
	}
	k := s.Key
	return &k
}

// updateBatcher merges the changes of concurrent reconciles into one
// UPDATE per zone: BIND applies a 500-record UPDATE about 30 times faster
// than 500 single-record ones (journal fsync per message:
// docs/bind-facts.md, "Measured limits"), so thousands of DNSRecords
// converge at the batched rate, not the per-object one.
//
// It is a group commit: each zone (per server and key) has at most one
// UPDATE in flight, and what arrives meanwhile goes out together as soon
// as it returns. A change that finds its zone idle waits only linger for
// company, so one edit is not held back by a fixed window (that window
// was two thirds of an edit's way to the secondaries), while a burst
// batches itself: the longer an UPDATE takes, the more the next one
// carries. BIND applies one zone's updates one at a time anyway.
//
// And it lingers only inside a burst: when another change reached the
// batcher less than burstGap before it. An edit on its own has no company
// coming, so its UPDATE goes at once.
type updateBatcher struct {
	// linger is how long a change that finds its zone idle, in a burst,
	// waits for company before its UPDATE goes.
	linger time.Duration
	// clock and sleep are time.Now and time.Sleep (seams for the tests).
	clock func() time.Time
	sleep func(time.Duration)
	// lastSubmit is when the previous change arrived (UnixNano; 0: none).
	lastSubmit atomic.Int64
	// max caps the changes of one UPDATE.
	max int
	// apply sends one batch to the zone's server: dnsclient's Apply
	// through the client cache (a seam for the batcher's own tests).
	apply applyFunc

	mu    sync.Mutex
	lanes map[batchKey]*lane
}

type batchKey struct{ addr, key, zone string }

type applyFunc func(ctx context.Context, srv Server, zone string, changes []dnsclient.Change) (dnsclient.BatchResult, error)

// lane is one zone's queue: batches waiting, oldest first; busy while a
// goroutine sends them.
type lane struct {
	queued []*batch
	busy   bool
}

type batch struct {
	server  Server
	changes []dnsclient.Change
	results []chan error
}

// burstGap is how close to the previous change a change must come for it
// to count as part of a burst and linger. 10,000 DNSRecords created by 32
// clients arrive about 5 ms apart; a user's edits, and the benchmark's
// (each waits until the previous one is served), are tens of ms apart.
const burstGap = 10 * time.Millisecond

func newUpdateBatcher(linger time.Duration, max int, apply applyFunc) *updateBatcher {
	return &updateBatcher{linger: linger, max: max, apply: apply, lanes: map[batchKey]*lane{}, clock: time.Now, sleep: time.Sleep}
}

// lingerNow is how long a change arriving now that finds its zone idle
// waits: linger inside a burst, else nothing.
func (b *updateBatcher) lingerNow() time.Duration {
	now := b.clock().UnixNano()
	prev := b.lastSubmit.Swap(now)
	if prev == 0 || time.Duration(now-prev) >= burstGap {
		return 0
	}
	return b.linger
}

// Submit queues one change and blocks until its batch was applied; the error
// is this change's own (e.g. *dnsclient.RcodeError YXRRSET), not its
// neighbours'.
func (b *updateBatcher) Submit(ctx context.Context, srv Server, zone string, change dnsclient.Change) error {
	return b.SubmitMany(ctx, srv, zone, []dnsclient.Change{change})[0]
}

// SubmitMany queues changes (to distinct record sets) together and blocks
// until every batch holding one was applied. It returns one error per
// change, nil where the change applied, so one refused set never holds back
// the rest.
func (b *updateBatcher) SubmitMany(ctx context.Context, srv Server, zone string, changes []dnsclient.Change) []error {
	results := make([]chan error, len(changes))
	k := batchKey{addr: srv.Addr, key: srv.Key.Name, zone: zone}
	linger := b.lingerNow()
	b.mu.Lock()
	l := b.lanes[k]
	if l == nil {
		l = &lane{}
		b.lanes[k] = l
	}
	for i, change := range changes {
		results[i] = make(chan error, 1)
		var bt *batch
		if n := len(l.queued); n > 0 && len(l.queued[n-1].changes) < b.max {
			bt = l.queued[n-1]
		} else {
			bt = &batch{server: srv}
			l.queued = append(l.queued, bt)
		}
		// The newest server and key win: a rotated secret reaches the
		// next UPDATE.
		bt.server = srv
		bt.changes = append(bt.changes, change)
		bt.results = append(bt.results, results[i])
	}
	if !l.busy {
		l.busy = true
		go b.run(k, l, zone, linger)
	}
	b.mu.Unlock()

	errs := make([]error, len(changes))
	for i, r := range results {
		select {
		case errs[i] = <-r:
		case <-ctx.Done():
			// The batch still goes out; the next reconcile sees its effect.
			errs[i] = ctx.Err()
		}
	}
	return errs
}

// run sends a lane's batches one after the other until it is empty, then
// retires the lane. It lingers (lingerNow) only before the first: later
// batches gathered while their predecessor was in flight.
func (b *updateBatcher) run(k batchKey, l *lane, zone string, linger time.Duration) {
	if linger > 0 {
		b.sleep(linger)
	}
	for {
		b.mu.Lock()
		if len(l.queued) == 0 {
			l.busy = false
			delete(b.lanes, k)
			b.mu.Unlock()
			return
		}
		bt := l.queued[0]
		l.queued = l.queued[1:]
		b.mu.Unlock()
		b.send(bt, zone)
	}
}

// Updates sends the operator's guarded, batched UPDATEs: one batcher and
// one client cache shared by every reconciler that writes records
// (DNSRecords and BindZone inline records), so changes to one zone share
// batches and kept connections.
type Updates struct {
	batcher *updateBatcher
	cache   *clientCache
}

// NewUpdates returns an Updates; zero linger and size take the defaults
// (2 ms, dnsclient.DefaultBatchSize).
func NewUpdates(linger time.Duration, size int) *Updates {
	if linger == 0 {
		linger = 2 * time.Millisecond
	}
	if size == 0 {
		size = dnsclient.DefaultBatchSize
	}
	cache := &clientCache{}
	apply := func(ctx context.Context, srv Server, zone string, changes []dnsclient.Change) (dnsclient.BatchResult, error) {
		c, err := cache.get(srv)
		if err != nil {
			return dnsclient.BatchResult{}, err
		}
		return c.Apply(ctx, zone, changes)
	}
	return &Updates{batcher: newUpdateBatcher(linger, size, apply), cache: cache}
}

func (b *updateBatcher) send(bt *batch, zone string) {
	// Bounded: an UPDATE batch never waits on a reconcile's context.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := b.apply(ctx, bt.server, zone, bt.changes)
	failed := make(map[int]error, len(res.Failed))
	for _, f := range res.Failed {
		failed[f.Index] = f.Err
	}
	for i, r := range bt.results {
		switch {
		case failed[i] != nil:
			r <- failed[i]
		case err != nil:
			// The run stopped (transport, key, SERVFAIL): which changes
			// landed is unknown, and every change is safe to retry
			// because each carries its own prerequisite.
			r <- errors.Join(ErrAborted, err)
		default:
			r <- nil
		}
	}
}

// ErrAborted marks the error of a change whose UPDATE run stopped as a
// whole (transport, key, SERVFAIL): it may or may not have landed, and is
// safe to retry since every change carries its own prerequisite. A change
// named refused on its own is never wrapped in it.
var ErrAborted = errors.New("the UPDATE batch was cut short")

// clientCache keeps one dnsclient.Client (one kept TCP connection) per
// server and key name; a rotated secret replaces the client.
type clientCache struct {
	mu      sync.Mutex // one client per key, even when callers race
	clients *idlecache.Cache[cachedClient]
	opts    dnsclient.Options
}

// clientIdle is how long a DNS client (its kept connection) may go unused
// before it is closed and forgotten: its cluster or key is gone.
const clientIdle = 15 * time.Minute

type cachedClient struct {
	key    dnsclient.Key
	client *dnsclient.Client
}

func (c *clientCache) get(srv Server) (*dnsclient.Client, error) {
	id := srv.Addr + "|" + srv.Key.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients == nil {
		c.clients = idlecache.New(clientIdle, func(cc cachedClient) { _ = cc.client.Close() }, nil)
	}
	if cached, ok := c.clients.Get(id); ok && cached.key.Equal(srv.Key) {
		return cached.client, nil
	}
	key := srv.Key
	cl, err := dnsclient.New(srv.Addr, &key, c.opts)
	if err != nil {
		return nil, err
	}
	c.clients.Put(id, cachedClient{key: key, client: cl})
	return cl, nil
}

// Submit sends one change through the shared batcher and blocks until its
// UPDATE was applied; the error is this change's own (e.g.
// *dnsclient.RcodeError YXRRSET), not its neighbours'.
func (u *Updates) Submit(ctx context.Context, srv Server, zone string, change dnsclient.Change) error {
	return u.batcher.Submit(ctx, srv, zone, change)
}

// SubmitMany sends changes (to distinct record sets of zone) through the
// shared batcher and returns one error per change, nil where it applied.
func (u *Updates) SubmitMany(ctx context.Context, srv Server, zone string, changes []dnsclient.Change) []error {
	return u.batcher.SubmitMany(ctx, srv, zone, changes)
}
