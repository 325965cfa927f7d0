package dnsrecords

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/internal/idlecache"
	"git.unkin.net/unkin/bind-operator/records"
)

// sweepParallel bounds the deletes of one sweep in flight: the batcher
// packs them into few UPDATEs, and each Submit waits for its batch.
const sweepParallel = 256

// storedOwners caches, per agent, which zones it keeps owners for: asked
// once per agent (one call, not one per zone, so a catalog of 10,000
// zones without DNSRecords costs nothing more), it tells which zones need
// a sweep on their first push.
//
// An agent is a pod's address, and every roll gives the primary a new
// one: answers nobody asked for in AgentClientIdle are dropped, as the
// agents' clients are, so the cache holds the live primaries, not every
// primary the operator ever pushed to. An agent idle that long is asked
// again; its answer then includes the owners this operator pushed, which
// changes nothing, since only a zone's first push to an agent sweeps
// (ZoneOwners.sent). The zero value is ready to use.
type storedOwners struct {
	mu      sync.Mutex
	byAgent *idlecache.Cache[*storedAnswer]
	now     func() time.Time // the clock of byAgent; nil is time.Now
}

// storedAnswer is the cache entry of one agent. Its mutex serialises the
// question: the zones of one cluster ask once, and an agent that does not
// answer holds up only its own cluster's pushes.
type storedAnswer struct {
	mu    sync.Mutex
	zones storedZones
	known bool // zones holds an answer; false after a failed question
}

// storedZones is one agent's answer; legacy marks an agent of an earlier
// release, which neither lists its owners nor takes values or owners
// without keys.
type storedZones struct {
	refs   map[agent.ZoneRef]bool
	legacy bool
}

func (s storedZones) has(ref agent.ZoneRef) bool { return s.refs[ref] }

// answer returns agentKey's entry, made empty the first time.
func (s *storedOwners) answer(agentKey string) *storedAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byAgent == nil {
		s.byAgent = idlecache.New(clusterpods.AgentClientIdle, func(*storedAnswer) {}, s.now)
	}
	a, ok := s.byAgent.Get(agentKey)
	if !ok {
		a = &storedAnswer{}
		s.byAgent.Put(agentKey, a)
	}
	return a
}

// zones returns the zones agentKey's agent stores owners for, asking it
// the first time, and again after a question that failed.
func (s *storedOwners) zones(ctx context.Context, ac *agent.Client, agentKey string) (storedZones, error) {
	a := s.answer(agentKey)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.known {
		return a.zones, nil
	}
	var z storedZones
	refs, err := ac.StoredOwnersList(ctx, validate.Replies)
	switch {
	case agent.IsNotFound(err):
		logf.FromContext(ctx).Info("the primary's agent is of an earlier release and cannot list the record sets it keeps: DNSRecords deleted while no operator ran keep their data in its zones; it keeps the sets of the records deleted from now on once the BIND pods run this release", "agent", agentKey)
		z.legacy = true
	case err != nil:
		return storedZones{}, fmt.Errorf("asking the primary's agent which zones' owners it keeps: %w", err)
	default:
		z.refs = make(map[agent.ZoneRef]bool, len(refs))
		for _, r := range refs {
			z.refs[r] = true
		}
	}
	a.zones, a.known = z, true
	return z, nil
}

// sweep removes from zone the data of the DNSRecords that its primary's
// agent still records but that no longer exist, nor wait as tombstones:
// deleted while no operator ran, or before this one finished them. Each
// delete is guarded by the values the record wrote, as a live delete is,
// so data someone else wrote since stays.
func (o *ZoneOwners) sweep(ctx context.Context, zone *bindv1alpha1.BindZone, ac *agent.Client, ref agent.ZoneRef, want agent.OwnersRequest) error {
	stored, err := ac.StoredOwners(ctx, ref, validate.Replies)
	if agent.IsNotFound(err) {
		return nil // forgotten since the list was read
	}
	if err != nil {
		return fmt.Errorf("reading the record sets the primary's agent keeps for zone %s: %w", ref.Zone, err)
	}
	gone := orphanedSets(stored.Sets, want.Sets, zone)
	if len(gone) == 0 {
		return nil
	}
	srv, err := o.servers.Resolve(ctx, zone)
	if errors.Is(err, clusterpods.ErrClusterGone) {
		return nil
	}
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sweepParallel)
	for _, c := range gone {
		g.Go(func() error {
			err := o.updates.Submit(gctx, srv, string(zone.Spec.ZoneName), c)
			var rc *dnsclient.RcodeError
			switch {
			case errors.As(err, &rc) && rc.Rcode == dns.RcodeNXRrset:
				return nil // changed since by someone else: not ours to delete
			case errors.As(err, &rc):
				// named refused it and will again: asking for ever would
				// keep the zone's owners from its agent. Said, and left.
				logf.FromContext(ctx).Info("named refused to remove the data of a DNSRecord deleted while no operator ran; it is left in the zone", "zone", ref.Zone, "name", c.Set.Name, "type", dns.TypeToString[c.Set.Type], "rcode", rc.RcodeName())
				return nil
			}
			return err // the transport: the push fails, and the sweep is tried again with it
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("removing the data of DNSRecords deleted while no operator ran from zone %s: %w", ref.Zone, err)
	}
	logf.FromContext(ctx).Info("removed the data of DNSRecords deleted while no operator ran", "zone", ref.Zone, "view", ref.View, "recordSets", len(gone))
	for _, c := range gone {
		if name, err := records.RelativeName(string(zone.Spec.ZoneName), c.Set.Name); err == nil {
			o.deleted.swept(ctx, client.ObjectKeyFromObject(zone), name, dns.TypeToString[c.Set.Type])
		}
	}
	return nil
}

// orphanedSets are the deletes of the stored sets that recorded values
// (a DNSRecord's) and that no DNSRecord with values of its own wants any
// more. A set only wanted by records that wrote nothing (one that lost the
// claim to the deleted record, a new one) is the deleted record's data
// still: it goes, so they can take the set over. The zone's apex and its
// spec.records never go, even where a deleted record once wrote them.
func orphanedSets(stored, want []agent.OwnedSet, zone *bindv1alpha1.BindZone) []dnsclient.Change {
	// The agent's names are lowercase without the final dot, ours absolute.
	id := func(s agent.OwnedSet) [2]string {
		return [2]string{strings.ToLower(strings.TrimSuffix(s.Name, ".")), strings.ToUpper(s.Type)}
	}
	wanted := make(map[[2]string]bool, len(want))
	for _, s := range want {
		if len(s.Values) > 0 {
			wanted[id(s)] = true
		}
	}
	for _, s := range zoneOwnSets(zone) {
		wanted[id(s)] = true
	}
	var out []dnsclient.Change
	for _, s := range stored {
		typ, known := dns.StringToType[strings.ToUpper(s.Type)]
		if len(s.Values) == 0 || wanted[id(s)] || !known {
			continue
		}
		out = append(out, dnsclient.Change{Op: dnsclient.Delete, Set: dnsclient.RRSet{Name: dns.Fqdn(s.Name), Type: typ}, Prev: s.Values})
	}
	return out
}
