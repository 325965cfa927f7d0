package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/agent"
)

// readiness decides /readyz. A background loop (checkReady) does the work
// so the kubelet's probe costs nothing and never waits on named:
//
//   - named must answer a DNS query on loopback (any reply: even REFUSED
//     proves the query path works);
//   - every required expected zone (see zoneState.required) must have been
//     seen loaded by this named process. named's boot time (rndc status)
//     identifies the process: when it changes, every zone is checked again.
//
// Zones are checked with rndc zonestatus rather than DNS because a zone in
// a view may not be visible to a loopback query.
type readiness struct {
	mu        sync.Mutex
	ready     bool
	reason    string
	checkedAt time.Time
	boot      string
	confirmed map[agent.ZoneRef]bool
}

func newReadiness() *readiness {
	return &readiness{reason: "not checked yet", confirmed: map[agent.ZoneRef]bool{}}
}

// confirm marks zones as loaded in the current named process.
func (r *readiness) confirm(refs []agent.ZoneRef) {
	if len(refs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ref := range refs {
		r.confirmed[ref] = true
	}
}

func (r *readiness) forget(ref agent.ZoneRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.confirmed, ref)
}

// status returns the last verdict; one older than maxAge counts as not
// ready (the loop is stuck, so nothing vouches for named).
func (r *readiness) status(now time.Time, maxAge time.Duration) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.checkedAt.IsZero() {
		return false, r.reason
	}
	if age := now.Sub(r.checkedAt); age > maxAge {
		return false, fmt.Sprintf("last readiness check was %s ago", age.Round(time.Second))
	}
	return r.ready, r.reason
}

func (r *readiness) set(ready bool, reason string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready, r.reason, r.checkedAt = ready, reason, now
}

// maxChecksPerRound bounds the zonestatus commands of one round; with a
// session at ~1,000+ commands/s a round stays around a second.
const maxChecksPerRound = 2000

// checkReady runs one readiness round.
func (a *Agent) checkReady(ctx context.Context) {
	ready, reason := a.evaluate(ctx)
	a.ready.set(ready, reason, time.Now())
	if ready {
		a.metrics.ready.Set(1)
	} else {
		a.metrics.ready.Set(0)
	}
}

func (a *Agent) evaluate(ctx context.Context) (bool, string) {
	if err := a.dnsAlive(ctx); err != nil {
		return false, "named does not answer DNS on " + a.cfg.DNSAddr + ": " + err.Error()
	}
	resp, err := a.probe.command(ctx, "status")
	if err != nil {
		return false, "control channel: " + err.Error()
	}
	boot := statusLine(resp.Text, "boot time")
	r := a.ready
	r.mu.Lock()
	if boot != r.boot {
		// Another named process: nothing it has loaded is known yet.
		r.boot = boot
		clear(r.confirmed)
	}
	var todo []zoneState
	for _, z := range a.store.snapshot() {
		if !r.confirmed[agent.ZoneRef{View: z.View, Zone: z.Zone}] {
			todo = append(todo, z)
		}
	}
	r.mu.Unlock()

	missing := 0
	var firstMissing string
	var nowLoaded, confirmed []agent.ZoneRef
	for i, z := range todo {
		ref := agent.ZoneRef{View: z.View, Zone: z.Zone}
		if i >= maxChecksPerRound {
			if z.required() {
				missing++
			}
			continue
		}
		st, err := a.zoneStatus(ctx, a.probe, ref)
		if err != nil {
			return false, "control channel: " + err.Error()
		}
		if st.Loaded {
			confirmed = append(confirmed, ref)
			if !z.Loaded {
				nowLoaded = append(nowLoaded, ref)
			}
			continue
		}
		if z.required() {
			if missing == 0 {
				firstMissing = target(ref)
			}
			missing++
		}
	}
	r.confirm(confirmed)
	if len(nowLoaded) > 0 {
		if err := a.store.update(func(m map[agent.ZoneRef]zoneState) []agent.ZoneRef {
			var changed []agent.ZoneRef
			for _, ref := range nowLoaded {
				if z, ok := m[ref]; ok && !z.Loaded {
					z.Loaded = true
					m[ref] = z
					changed = append(changed, ref)
				}
			}
			return changed
		}); err != nil {
			a.log.Warn("persisting loaded zones", "err", err)
		}
	}
	if missing > 0 {
		return false, fmt.Sprintf("%d expected zone(s) not loaded yet, e.g. %s", missing, firstMissing)
	}
	return true, "ok"
}

// dnsAlive sends one query to named on loopback. Any well-formed reply
// counts.
func (a *Agent) dnsAlive(ctx context.Context) error {
	m := new(dns.Msg)
	m.SetQuestion("version.bind.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	var err error
	for attempt := 0; attempt < 2; attempt++ { // one retry for a lost UDP packet
		if _, _, err = c.ExchangeContext(ctx, m, a.cfg.DNSAddr); err == nil {
			return nil
		}
	}
	return err
}

func statusLine(text, key string) string {
	for line := range strings.SplitSeq(text, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
