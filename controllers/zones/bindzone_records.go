package zones

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/records"
)

// recordsDue tells whether this reconcile compares and applies spec.records:
// on a spec change, a fresh zone, a resync request, a past failure, or when
// the last check is older than the resync period. periodic is true when
// only the period is why: then a zone whose primary still serves the
// serial of the last check is not transferred again (unchangedSinceCheck).
func (r *BindZoneReconciler) recordsDue(zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus, added bool) (due, periodic bool) {
	switch {
	case added, status.ObservedGeneration != zone.Generation, status.LastDriftCheck == nil,
		zone.Annotations[bindv1alpha1.AnnotationResync] != status.ObservedResync,
		len(status.RejectedRecords) > 0:
		return true, false
	}
	c := meta.FindStatusCondition(status.Conditions, bindv1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionTrue {
		return true, false
	}
	return time.Since(status.LastDriftCheck.Time) >= r.resyncPeriod(), true
}

// A periodic drift check looks for changes someone else made to the sets
// the zone declares or wrote. Every change named accepts (an UPDATE, a
// reload of a file with a new serial) moves the zone's serial, so a
// primary that serves the serial the last full check transferred holds
// what that check saw: one SOA query instead of a transfer of the whole
// zone, which for a zone seeded with 100,000 records is megabytes every
// resync period. A zone that changed is asked for the changes since that
// serial (IXFR, from the journal every dynamic zone keeps), and only a
// change to a set the zone checks costs the full transfer.
// checkedSerials remembers that serial per zone (by UID, in memory: an
// operator that starts again checks each zone in full once).

// untouchedSinceCheck reports whether the zone's last full drift check
// still holds: the primary serves the serial that check saw, or the
// changes since then (IXFR) touch none of the sets the zone declares or
// wrote and leave the SOA's fields alone. Records DNSRecords and dynamic
// updates keep changing do not cost a transfer of the zone. Any doubt (no
// check remembered, a failed query, a primary that answers with the whole
// zone) is a no; when it is a yes the serial it saw is remembered.
func (r *BindZoneReconciler) untouchedSinceCheck(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, status *bindv1alpha1.BindZoneStatus) bool {
	v, ok := r.checkedSerials.Load(zone.UID)
	if !ok {
		return false
	}
	from := v.(uint32)
	key := t.transferKey()
	serial, err := clusterpods.SOASerial(ctx, t.srv.Addr, key, t.zoneName)
	if err != nil {
		return false
	}
	if serial == from {
		return true
	}
	checked := map[setKey]bool{}
	for i, s := range zone.Spec.Records {
		cs, errs := records.CanonicalizeSet(t.zoneName, s, zone.EffectiveDefaultTTL(), field.NewPath("spec", "records").Index(i))
		if len(errs) > 0 {
			return false
		}
		checked[setKey{string(cs.Name), string(cs.Type)}] = true
	}
	for _, m := range status.ManagedRecords {
		checked[setKey{m.Name, m.Type}] = true
	}
	c, err := dnsclient.New(t.srv.Addr, key, dnsclient.Options{Timeout: 30 * time.Second})
	if err != nil {
		return false
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, driftCheckDeadline)
	defer cancel()
	errTouched := errors.New("a checked set changed")
	now, soaChanged, err := c.IXFRChanges(ctx, t.zoneName, from, func(rr dns.RR, _ bool) error {
		h := rr.Header()
		name, err := records.RelativeName(t.zoneName, dns.Fqdn(h.Name))
		if err == nil && checked[setKey{name, dns.TypeToString[h.Rrtype]}] {
			return errTouched
		}
		return nil
	})
	if err != nil || soaChanged {
		return false
	}
	r.checkedSerials.Store(zone.UID, now)
	return true
}

type setKey struct{ name, typ string }

type servedSet struct {
	ttl    uint32
	values []string
}

// syncRecords makes the primary serve spec.records: it transfers the zone
// (AXFR, keyed with K), and for every declared set that differs sends an
// upsert; a set it wrote before and that is no longer declared is deleted
// only while the primary still serves exactly what it wrote (digest). All
// changes go through the shared batcher; a refused set is reported with
// BIND's rcode and the rest still applies.
func (r *BindZoneReconciler) syncRecords(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, status *bindv1alpha1.BindZoneStatus) error {
	defaultTTL := zone.EffectiveDefaultTTL()
	var rejected []bindv1alpha1.RejectedRecordSet
	var desired []bindv1alpha1.RecordSet
	seen := map[setKey]bool{}
	for i, s := range zone.Spec.Records {
		cs, errs := records.CanonicalizeSet(t.zoneName, s, defaultTTL, field.NewPath("spec", "records").Index(i))
		if len(errs) > 0 {
			rejected = append(rejected, bindv1alpha1.RejectedRecordSet{Name: string(s.Name), Type: string(s.Type), Message: agent.Bound(errs.ToAggregate().Error())})
			continue
		}
		k := setKey{string(cs.Name), string(cs.Type)}
		if seen[k] {
			continue
		}
		seen[k] = true
		desired = append(desired, cs)
	}

	prev := map[setKey]string{}
	for _, m := range status.ManagedRecords {
		prev[setKey{m.Name, m.Type}] = m.Digest
	}
	// A zone that declares no set and wrote none (one seeded from its
	// file, one whose records are all DNSRecords) has nothing to compare:
	// no transfer.
	served := map[setKey]servedSet{}
	if len(desired) > 0 || len(prev) > 0 {
		var serial uint32
		var err error
		served, serial, err = r.served(ctx, t, func(k setKey) bool {
			_, wrote := prev[k]
			return seen[k] || wrote
		})
		if err != nil {
			r.checkedSerials.Delete(zone.UID)
			return err
		}
		r.checkedSerials.Store(zone.UID, serial)
	}

	var changes []dnsclient.Change
	var owners []bindv1alpha1.ManagedRecordSet // per change: what it manages afterwards ("" digest: nothing)
	var managed []bindv1alpha1.ManagedRecordSet
	repaired := 0
	for _, s := range desired {
		k := setKey{string(s.Name), string(s.Type)}
		ttl := uint32(ptr.Deref(s.TTL, bindv1alpha1.TTL(defaultTTL)))
		m := bindv1alpha1.ManagedRecordSet{Name: k.name, Type: k.typ, Digest: setDigest(ttl, s.Values)}
		if cur, ok := served[k]; ok && cur.ttl == ttl && slices.Equal(cur.values, s.Values) {
			managed = append(managed, m)
			continue
		}
		if _, ok := served[k]; ok && prev[k] == m.Digest {
			repaired++ // we wrote it, someone changed it: the declaration wins
		}
		changes = append(changes, dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{
			Name: records.FQDN(t.zoneName, k.name), Type: dns.StringToType[k.typ], TTL: ttl, Values: s.Values,
		}})
		owners = append(owners, m)
	}
	for _, m := range status.ManagedRecords {
		k := setKey{m.Name, m.Type}
		if seen[k] {
			continue
		}
		cur, ok := served[k]
		if !ok || setDigest(cur.ttl, cur.values) != m.Digest {
			continue // gone already, or changed by someone else: not ours to delete
		}
		changes = append(changes, dnsclient.Change{Op: dnsclient.Delete, Prev: cur.values, Set: dnsclient.RRSet{
			Name: records.FQDN(t.zoneName, k.name), Type: dns.StringToType[k.typ],
		}})
		owners = append(owners, bindv1alpha1.ManagedRecordSet{})
	}

	if len(changes) > 0 {
		errs := r.Updates.SubmitMany(ctx, t.srv, t.zoneName, changes)
		var transport error
		for i, err := range errs {
			o := owners[i]
			var rc *dnsclient.RcodeError
			switch {
			case err == nil:
				if o.Digest != "" {
					managed = append(managed, o)
				}
			case errors.As(err, &rc) && !errors.Is(err, batch.ErrAborted):
				name, typ := changes[i].Set.Name, dns.TypeToString[changes[i].Set.Type]
				if rel, rerr := records.RelativeName(t.zoneName, name); rerr == nil {
					name = rel
				}
				rejected = append(rejected, bindv1alpha1.RejectedRecordSet{Name: name, Type: typ, Rcode: rc.RcodeName(), Message: agent.Bound(err.Error())})
				if prevDigest, ok := prev[setKey{name, typ}]; ok && o.Digest == "" {
					managed = append(managed, bindv1alpha1.ManagedRecordSet{Name: name, Type: typ, Digest: prevDigest})
				}
			default:
				transport = err
			}
		}
		if transport != nil {
			// Key refusals (NOTAUTH/BADSIG), SERVFAIL or the network: the
			// whole batch stopped, report it and retry.
			var rc *dnsclient.RcodeError
			if errors.As(transport, &rc) {
				return primaryRefused("updates", rc, transport)
			}
			return &problem{bindv1alpha1.ReasonPrimaryNotReady, agent.Bound(fmt.Sprintf("the updates did not reach the primary: %v", transport)), 10 * time.Second}
		}
		applied := len(changes) - len(rejected)
		r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "RecordsApplied", "Update", "%d record set change(s) applied to %s", applied, t.zoneName)
	}
	if repaired > 0 {
		r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "Repaired", "Resync", "%d declared record set(s) of %s had drifted and were restored", repaired, t.zoneName)
	}
	slices.SortFunc(managed, func(a, b bindv1alpha1.ManagedRecordSet) int {
		return strings.Compare(a.Name+"/"+a.Type, b.Name+"/"+b.Type)
	})
	if len(rejected) > 100 {
		rejected = rejected[:100]
	}
	status.ManagedRecords = managed
	status.RejectedRecords = rejected
	status.RecordCount = int32(len(desired))
	status.LastDriftCheck = &metav1.Time{Time: time.Now()}
	status.ObservedResync = zone.Annotations[bindv1alpha1.AnnotationResync]
	return nil
}

// driftCheckDeadline bounds one drift check's zone transfer as a whole
// (the client's timeout is per message): a primary that trickles a huge
// zone cannot hold a reconcile worker longer than this.
const driftCheckDeadline = 2 * time.Minute

// served transfers the zone from the primary and returns the sets keep
// asks for, grouped, values canonical and sorted. Only those are held: the
// transfer streams, so checking a BindZone's few declared sets costs no
// memory for the rest of the zone (names external-dns or DNSRecords
// manage). The transfer is untrusted input: records outside the zone or
// that do not canonicalise are skipped.
func (r *BindZoneReconciler) served(ctx context.Context, t *zoneTarget, keep func(setKey) bool) (map[setKey]servedSet, uint32, error) {
	key := t.transferKey()
	c, err := dnsclient.New(t.srv.Addr, key, dnsclient.Options{Timeout: 30 * time.Second})
	if err != nil {
		return nil, 0, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, driftCheckDeadline)
	defer cancel()
	out := map[setKey]servedSet{}
	serial, err := c.AXFREach(ctx, t.zoneName, func(rr dns.RR) error {
		h := rr.Header()
		typ := dns.TypeToString[h.Rrtype]
		if h.Rrtype == dns.TypeSOA || !records.IsSupported(typ) {
			return nil
		}
		name, err := records.RelativeName(t.zoneName, dns.Fqdn(h.Name))
		if err != nil {
			return nil
		}
		k := setKey{name, typ}
		if !keep(k) {
			return nil
		}
		v, err := records.CanonicalValue(t.zoneName, name, typ, records.Rdata(rr))
		if err != nil {
			v = records.Rdata(rr)
		}
		s := out[k]
		s.ttl = h.Ttl
		s.values = append(s.values, v)
		out[k] = s
		return nil
	})
	if err != nil {
		var rc *dnsclient.RcodeError
		if errors.As(err, &rc) {
			return nil, 0, primaryRefused("transfer", rc, err)
		}
		return nil, 0, &problem{bindv1alpha1.ReasonPrimaryNotReady, agent.Bound(fmt.Sprintf("cannot transfer the zone from the primary: %v", err)), 10 * time.Second}
	}
	for k, s := range out {
		slices.Sort(s.values)
		s.values = slices.Compact(s.values)
		out[k] = s
	}
	return out, serial, nil
}

// setDigest identifies what was written without storing it: the first 16
// bytes of SHA-256 over the TTL and the canonical values.
func setDigest(ttl uint32, values []string) string {
	h := sha256.New()
	h.Write([]byte(strconv.FormatUint(uint64(ttl), 10)))
	for _, v := range values {
		h.Write([]byte{0})
		h.Write([]byte(v))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// zoneNotLoadedRetry is how soon a zone whose primary answers SERVFAIL is
// reconciled again. rndc addzone returns before named has loaded the zone
// (the load runs on named's tasks), so the transfer or UPDATE that follows
// an add can find it not loaded yet: about one zone in ten while 2,000
// zones were added to one cluster at once. Reported as a refusal, each of
// those waited 30 s.
const zoneNotLoadedRetry = 2 * time.Second

// primaryRefused is the problem for a zone transfer or UPDATE (what) that
// the primary answered with an error rcode: SERVFAIL means named has not
// loaded the zone (yet, or its data is broken) and is retried soon; the
// others (NOTAUTH, REFUSED: keys and ACLs) need a change and are retried
// slowly.
func primaryRefused(what string, rc *dnsclient.RcodeError, err error) *problem {
	if rc.Rcode == dns.RcodeServerFailure {
		return &problem{bindv1alpha1.ReasonPrimaryNotReady, agent.Bound(fmt.Sprintf("the primary answered the zone's %s with SERVFAIL: it has not loaded the zone (yet): %v", what, err)), zoneNotLoadedRetry}
	}
	return &problem{bindv1alpha1.ReasonRecordsRefused, agent.Bound(fmt.Sprintf("the primary refused the zone's %s with %s: %v", what, rc.RcodeName(), err)), 30 * time.Second}
}
