package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
)

// ZoneEnsurer is the agent API a ZoneBatcher sends through: *agent.Client
// (tests put a fake in its place).
type ZoneEnsurer interface {
	EnsureZones(ctx context.Context, zones []agent.EnsureZoneRequest) ([]agent.EnsureZoneResult, error)
}

// ZoneBatchOptions tunes a ZoneBatcher; zero values take the defaults.
type ZoneBatchOptions struct {
	// MaxZones flushes a batch once it holds this many zones (default 256,
	// at most agent.MaxBatchZones). Large enough to carry every reconcile
	// worker's zone at once, small enough that one batch is seconds, not
	// minutes, of named's time.
	MaxZones int
	// MaxBytes bounds a batch's encoded size (default and maximum
	// agent.MaxBatchBytes less room for the envelope).
	MaxBytes int
	// Linger is how long the first zone after a quiet spell waits for
	// company (default 2 ms). Zones that arrive while a call is running
	// do not wait: they go as soon as it returns.
	Linger time.Duration
	// CallTimeout bounds one EnsureZones call (default 60 s, the agent
	// client's own bound).
	CallTimeout time.Duration
}

// ZoneBatcher coalesces the zone ensures of concurrent reconciles into
// EnsureZones calls, one queue per pod. The agent serialises zone changes
// anyway (one control session), so concurrent single ensures only queue
// there, each paying its own HTTPS round trip, JSON decode and state
// write; a batch pays them once (one rndc session adds ~1,350 zones/s:
// docs/bind-facts.md, "Measured limits"). Each caller still gets its own
// result or error: named's refusal of one zone, or the agent's refusal of
// one entry, is not its neighbours'.
//
// It holds a goroutine per pod only while that pod has work, and none
// after Close.
type ZoneBatcher struct {
	opts   ZoneBatchOptions
	ctx    context.Context // cancelled by Close: in-flight calls stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	pods   map[string]*zoneQueue
}

type zoneQueue struct {
	via   ZoneEnsurer
	items []*ensureItem
	bytes int
	full  chan struct{} // buffered: wakes a lingering sender early
}

type ensureItem struct {
	ctx  context.Context
	req  agent.EnsureZoneRequest
	size int
	out  chan ensureOutcome // buffered: delivery never blocks on a caller that left
}

type ensureOutcome struct {
	res agent.EnsureZoneResult
	err error
}

// ErrZoneBatcherClosed is the error of an ensure the batcher could not send
// because the manager is stopping.
var ErrZoneBatcherClosed = errors.New("the zone batcher is stopped")

// batchEnvelope is room for `{"zones":[...]}` and the commas.
const batchEnvelope = 1 << 10

// NewZoneBatcher returns a batcher; Close it when done.
func NewZoneBatcher(opts ZoneBatchOptions) *ZoneBatcher {
	if opts.MaxZones <= 0 || opts.MaxZones > agent.MaxBatchZones {
		opts.MaxZones = min(256, agent.MaxBatchZones)
	}
	if limit := agent.MaxBatchBytes - batchEnvelope; opts.MaxBytes <= 0 || opts.MaxBytes > limit {
		opts.MaxBytes = limit
	}
	if opts.Linger <= 0 {
		opts.Linger = 2 * time.Millisecond
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 60 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &ZoneBatcher{opts: opts, ctx: ctx, cancel: cancel, pods: map[string]*zoneQueue{}}
}

// Ensure queues one zone for the pod named by key, sent through via, and
// waits for its own result. The error is this zone's: an *agent.Error with
// a 4xx status when the agent or named refused it (as a single EnsureZone
// would report it), anything else when the call failed as a whole. A
// cancelled ctx returns at once; a zone not yet sent is then dropped.
func (b *ZoneBatcher) Ensure(ctx context.Context, key string, via ZoneEnsurer, req agent.EnsureZoneRequest) (agent.EnsureZoneResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return agent.EnsureZoneResult{}, err
	}
	if len(body) > agent.MaxRequestBytes {
		return agent.EnsureZoneResult{}, fmt.Errorf("agent: request of %d bytes exceeds the limit of %d", len(body), agent.MaxRequestBytes)
	}
	it := &ensureItem{ctx: ctx, req: req, size: len(body) + 1, out: make(chan ensureOutcome, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return agent.EnsureZoneResult{}, ErrZoneBatcherClosed
	}
	q, ok := b.pods[key]
	if !ok {
		q = &zoneQueue{full: make(chan struct{}, 1)}
		b.pods[key] = q
		b.wg.Add(1)
		go b.run(key, q)
	}
	q.via = via // the newest client: a renewed certificate replaces it
	q.items = append(q.items, it)
	q.bytes += it.size
	if len(q.items) >= b.opts.MaxZones || q.bytes >= b.opts.MaxBytes {
		select {
		case q.full <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	select {
	case o := <-it.out:
		return o.res, o.err
	case <-ctx.Done():
		return agent.EnsureZoneResult{}, ctx.Err()
	}
}

// Close stops the batcher: in-flight calls are cancelled, queued ensures
// fail with ErrZoneBatcherClosed, and Close returns once every sender
// goroutine has exited.
func (b *ZoneBatcher) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

// run sends a pod's queue until it is empty: the first batch after a
// lingering pause, every later one as soon as the previous call returns
// (what queued meanwhile is the next batch).
func (b *ZoneBatcher) run(key string, q *zoneQueue) {
	defer b.wg.Done()
	linger := time.NewTimer(b.opts.Linger)
	select {
	case <-linger.C:
	case <-q.full:
	case <-b.ctx.Done():
	}
	linger.Stop()
	for {
		b.mu.Lock()
		if b.closed {
			delete(b.pods, key)
			items := q.items
			q.items = nil
			b.mu.Unlock()
			deliverAll(items, ensureOutcome{err: ErrZoneBatcherClosed})
			return
		}
		batch := b.take(q)
		if len(batch) == 0 {
			delete(b.pods, key)
			b.mu.Unlock()
			return
		}
		via := q.via
		b.mu.Unlock()
		b.send(via, batch)
	}
}

// take removes the next batch from q (b.mu held). Zones whose caller has
// gone are dropped unsent. A zone already in this batch stays queued for
// the next: the agent refuses a batch that names a zone twice.
func (b *ZoneBatcher) take(q *zoneQueue) []*ensureItem {
	var batch, rest []*ensureItem
	seen := map[agent.ZoneRef]bool{}
	size := 0
	for _, it := range q.items {
		if it.ctx.Err() != nil {
			q.bytes -= it.size
			continue
		}
		ref := agent.ZoneRef{View: it.req.View, Zone: it.req.Zone}
		if seen[ref] || len(batch) == b.opts.MaxZones || (len(batch) > 0 && size+it.size > b.opts.MaxBytes) {
			rest = append(rest, it)
			continue
		}
		seen[ref] = true
		size += it.size
		q.bytes -= it.size
		batch = append(batch, it)
	}
	q.items = rest
	return batch
}

// send makes one EnsureZones call for batch and hands every caller its own
// outcome. The agent validates a whole batch before applying any of it, so
// one refused entry would fail its neighbours: that entry gets the refusal
// and the rest are sent again (at most once per entry), and a refusal that
// names no entry is retried zone by zone so it lands only where it
// belongs.
func (b *ZoneBatcher) send(via ZoneEnsurer, batch []*ensureItem) {
	pending := batch
	for range len(batch) {
		reqs := make([]agent.EnsureZoneRequest, len(pending))
		for i, it := range pending {
			reqs[i] = it.req
		}
		ctx, cancel := context.WithTimeout(b.ctx, b.opts.CallTimeout)
		res, err := via.EnsureZones(ctx, reqs)
		cancel()
		var be *agent.BatchError
		var ae *agent.Error
		switch {
		case err == nil || errors.As(err, &be):
			if len(res) != len(pending) {
				deliverAll(pending, ensureOutcome{err: fmt.Errorf("%w: %d results for %d zones", agent.ErrBadReply, len(res), len(pending))})
				return
			}
			for i, it := range pending {
				it.out <- entryOutcome(it.req, res[i])
			}
			return
		case errors.As(err, &ae) && ae.Invalid():
			if i, ok := refusedEntry(ae, len(pending)); ok {
				pending[i].out <- ensureOutcome{err: entryRefusal(ae, i)}
				pending = append(pending[:i:i], pending[i+1:]...)
				if len(pending) == 0 {
					return
				}
				continue
			}
			if len(pending) > 1 && contentRefused(ae.Status) {
				for _, it := range pending {
					b.send(via, []*ensureItem{it})
				}
				return
			}
		}
		deliverAll(pending, ensureOutcome{err: err})
		return
	}
	deliverAll(pending, ensureOutcome{err: fmt.Errorf("%w: the agent refused every retry of the batch", agent.ErrBadReply)})
}

// entryOutcome turns one batch result into what a single EnsureZone would
// have returned. The reply is untrusted: a result for another zone is a
// malformed reply, not a success.
func entryOutcome(req agent.EnsureZoneRequest, r agent.EnsureZoneResult) ensureOutcome {
	if r.Zone != req.Zone || r.View != req.View {
		return ensureOutcome{err: fmt.Errorf("%w: result for zone %q where %q was asked", agent.ErrBadReply, agent.Bound(r.Zone), req.Zone)}
	}
	if r.Error != "" {
		// What the single ensure answers when named refuses: 422.
		return ensureOutcome{err: &agent.Error{Status: http.StatusUnprocessableEntity, Message: agent.Bound("named refused: " + r.Error)}}
	}
	return ensureOutcome{res: r}
}

// refusedEntry finds the entry a batch refusal names ("zones[3].clause").
func refusedEntry(e *agent.Error, n int) (int, bool) {
	rest, ok := strings.CutPrefix(e.Field, "zones[")
	if !ok {
		return 0, false
	}
	idx, _, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 || i >= n {
		return 0, false
	}
	return i, true
}

// entryRefusal is a batch refusal as the single ensure of entry i would
// have reported it, without the batch's "zones[i]" prefixes.
func entryRefusal(e *agent.Error, i int) *agent.Error {
	prefix := "zones[" + strconv.Itoa(i) + "]"
	return &agent.Error{
		Status:  e.Status,
		Message: strings.TrimPrefix(e.Message, prefix+": "),
		Field:   strings.TrimPrefix(e.Field, prefix+"."),
	}
}

// contentRefused tells the statuses that blame the request's content, so
// that a smaller request may pass.
func contentRefused(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity
}

func deliverAll(items []*ensureItem, o ensureOutcome) {
	for _, it := range items {
		it.out <- o
	}
}
