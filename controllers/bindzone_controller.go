package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/records"
	"git.unkin.net/unkin/bind-operator/render"
)

// zoneFinalizer removes a primary zone from the pods (delzone) and from its
// catalog before the BindZone goes away.
const zoneFinalizer = "bind.unkin.net/bindzone"

// Condition reasons of a BindZone.
const (
	ReasonServed          = "Served"
	ReasonInConfig        = "InConfig"
	ReasonClusterNotFound = "ClusterNotFound"
	ReasonInvalidZone     = "InvalidZone"
	ReasonPrimaryNotReady = "PrimaryNotReady"
	ReasonAgentError      = "AgentError"
	ReasonRecordsRefused  = "RecordsRefused"
	ReasonReplicating     = "Replicating"
)

// DefaultResyncPeriod is how often a BindZone compares what named serves
// with spec.records when nothing else triggers it.
const DefaultResyncPeriod = 5 * time.Minute

// BindZoneReconciler runs primary zones on a cluster's primary pod:
//
//   - the zone is added through the primary's agent (rndc addzone with the
//     seed SOA; modzone when the clause changes), with allow-update for the
//     operator key (OperatorKeyRef), keyed allow-transfer for the
//     secondaries and `also-notify { <secondary pod IP> key "K"; }` that is
//     re-applied whenever a secondary's pod IP changes (never in named.conf);
//   - spec.records go to named as guarded, batched UPDATEs (shared with the
//     DNSRecord controller) and are compared with an AXFR periodically
//     (ResyncPeriod) and on demand (annotation bind.unkin.net/resync);
//     declared data is repaired, data nobody declared is never touched;
//   - a zone in a catalog gets a PTR <CatalogMemberLabel>.zones.<catalog>
//     (UPDATE signed with the catalog's key); a zone outside catalogs is
//     added on every secondary through its agent, transferring from the
//     primary Service keyed with K;
//   - status reports the primary's serial and, per secondary, whether it
//     serves it.
//
// Secondary, Stub and Forward zones live in named.conf (render); this
// reconciler only reports them.
type BindZoneReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Servers resolves where UPDATEs go; nil means ClusterResolver over
	// Endpoints.
	Servers ZoneServerResolver
	// Endpoints locates the pods; nil means KubePods.
	Endpoints PodEndpoints
	// Updates is the shared UPDATE batcher; nil creates one.
	Updates *Updates
	// Paths are the pods' mount points (render.DefaultPaths when zero).
	Paths render.Paths
	// ResyncPeriod bounds how stale a drift check may be; zero means
	// DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// MaxConcurrentReconciles defaults to 8.
	MaxConcurrentReconciles int

	agents *agentClients
}

// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindzones,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindzones/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindzones/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// Reconcile applies one BindZone.
func (r *BindZoneReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var zone bindv1alpha1.BindZone
	if err := r.Client.Get(ctx, req.NamespacedName, &zone); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if zone.DeletionTimestamp != nil {
		return r.finalize(ctx, &zone)
	}
	status := zone.Status.DeepCopy()
	if zone.Spec.Type != bindv1alpha1.ZonePrimary && zone.Spec.Type != "" {
		status.ObservedGeneration = zone.Generation
		setZoneCondition(&zone, status, metav1.ConditionTrue, ReasonInConfig,
			fmt.Sprintf("%s zones are declared in named.conf by BindCluster %q.", zone.Spec.Type, zone.Spec.ClusterRef.Name))
		return ctrl.Result{}, r.patchStatus(ctx, &zone, status)
	}
	if controllerutil.AddFinalizer(&zone, zoneFinalizer) {
		if err := r.Client.Update(ctx, &zone); err != nil {
			return ctrl.Result{}, err
		}
	}
	res, err := r.apply(ctx, &zone, status)
	status.ObservedGeneration = zone.Generation
	if uerr := r.patchStatus(ctx, &zone, status); uerr != nil {
		return ctrl.Result{}, errors.Join(err, uerr)
	}
	if err == nil && res.RequeueAfter == 0 {
		res.RequeueAfter = r.resyncPeriod()
	}
	return res, err
}

func (r *BindZoneReconciler) resyncPeriod() time.Duration {
	if r.ResyncPeriod > 0 {
		return r.ResyncPeriod
	}
	return DefaultResyncPeriod
}

// zoneTarget is everything one reconcile needs to reach a zone's pods.
type zoneTarget struct {
	cluster   *bindv1alpha1.BindCluster
	zoneName  string // canonical
	view      string
	in        render.Input
	clauses   map[render.Paths]*render.ZoneClauses
	effective *bindv1alpha1.BindZone // updateKeyRef filled with the operator key
	pods      []PodEndpoint          // primary first
	srv       ZoneServer             // UPDATEs
	xfrKey    *dnsclient.Key         // K: transfers of the zone, catalog updates
}

// clause renders the zone's runtime clause for a pod (its own paths when
// the seam gives some).
func (t *zoneTarget) clause(p *PodEndpoint, role render.ZoneRole, notify []string) (string, error) {
	paths := t.in.Paths
	if p != nil && p.Paths != nil {
		paths = *p.Paths
	}
	zc, ok := t.clauses[paths]
	if !ok {
		in := t.in
		in.Paths = paths
		var err error
		if zc, err = render.NewZoneClauses(in); err != nil {
			return "", &problem{ReasonInvalidZone, err.Error(), time.Minute}
		}
		t.clauses[paths] = zc
	}
	if p == nil {
		return "", nil
	}
	c, err := zc.Clause(t.effective, role, notify)
	if err != nil {
		return "", &problem{ReasonInvalidZone, err.Error(), time.Minute}
	}
	return c, nil
}

func (t *zoneTarget) primary() *PodEndpoint {
	if len(t.pods) > 0 && t.pods[0].Primary {
		return &t.pods[0]
	}
	return nil
}

func (t *zoneTarget) secondaries() []PodEndpoint {
	if t.primary() != nil {
		return t.pods[1:]
	}
	return t.pods
}

// problem is a reconcile outcome that goes to the Ready condition.
type problem struct {
	reason  string
	msg     string
	requeue time.Duration
}

func (p *problem) Error() string { return p.msg }

func (r *BindZoneReconciler) target(ctx context.Context, zone *bindv1alpha1.BindZone) (*zoneTarget, error) {
	var cluster bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: zone.Spec.ClusterRef.Name}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &problem{ReasonClusterNotFound, fmt.Sprintf("BindCluster %q does not exist in this namespace; create it or fix spec.clusterRef", zone.Spec.ClusterRef.Name), 30 * time.Second}
		}
		return nil, err
	}
	t := &zoneTarget{cluster: &cluster, zoneName: records.CanonicalZone(string(zone.Spec.ZoneName))}
	if zone.Spec.ViewRef != nil {
		t.view = zone.Spec.ViewRef.Name
	}
	addr, port, err := r.Endpoints.Transfer(ctx, &cluster)
	if err != nil {
		return nil, &problem{ReasonPrimaryNotReady, err.Error(), 10 * time.Second}
	}
	keyObj, err := OperatorKeyRef(ctx, r.Client, &cluster, zone)
	if err != nil {
		return nil, &problem{ReasonInvalidZone, err.Error(), time.Minute}
	}
	t.effective = zone.DeepCopy()
	t.effective.Spec.UpdateKeyRef = &bindv1alpha1.LocalObjectReference{Name: keyObj}

	in, err := gatherInput(ctx, r.Client, &cluster, addr, clauseControlKey, r.Paths)
	if err != nil {
		return nil, &problem{ReasonInvalidZone, fmt.Sprintf("the zone's configuration inputs are incomplete: %v", err), 30 * time.Second}
	}
	in.PrimaryPort = port
	in.Zones = []bindv1alpha1.BindZone{*t.effective}
	if _, ok := in.Keys[keyObj]; !ok {
		var k bindv1alpha1.BindTSIGKey
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: keyObj}, &k); err != nil {
			return nil, &problem{ReasonInvalidZone, fmt.Sprintf("BindTSIGKey %q: %v", keyObj, err), 30 * time.Second}
		}
		m, err := keyMaterial(ctx, r.Client, &k)
		if err != nil {
			return nil, &problem{ReasonInvalidZone, err.Error(), 30 * time.Second}
		}
		in.Keys[keyObj] = m
	}
	t.in = in
	t.clauses = map[render.Paths]*render.ZoneClauses{}
	if _, err := t.clause(nil, render.ZoneRolePrimary, nil); err != nil {
		return nil, err
	}
	if xfr, err := TransferKeyRef(ctx, r.Client, &cluster, zone); err == nil && xfr != "" {
		k, err := loadUpdateKey(ctx, r.Client, zone.Namespace, xfr)
		if err != nil {
			return nil, &problem{ReasonInvalidZone, err.Error(), 30 * time.Second}
		}
		t.xfrKey = &k
	}
	if t.pods, err = r.Endpoints.Pods(ctx, &cluster); err != nil {
		return nil, err
	}
	if t.primary() == nil {
		return nil, &problem{ReasonPrimaryNotReady, fmt.Sprintf("the primary pod of BindCluster %q has no address yet", cluster.Name), 10 * time.Second}
	}
	if t.srv, err = r.Servers.Resolve(ctx, zone); err != nil {
		return nil, &problem{ReasonPrimaryNotReady, err.Error(), 10 * time.Second}
	}
	return t, nil
}

// clauseControlKey stands in for the rndc control key when building zone
// clauses: render validates it, but no clause ever names it.
var clauseControlKey = render.TSIGKey{Name: "bind-operator-control", Algorithm: "hmac-sha256", Secret: base64.StdEncoding.EncodeToString(make([]byte, 32))}

func (r *BindZoneReconciler) apply(ctx context.Context, zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus) (ctrl.Result, error) {
	t, err := r.target(ctx, zone)
	if err != nil {
		return r.report(zone, status, err)
	}
	added, err := r.ensureOnPods(ctx, zone, t)
	if err != nil {
		return r.report(zone, status, err)
	}
	if r.recordsDue(zone, status, added) {
		if err := r.syncRecords(ctx, zone, t, status); err != nil {
			return r.report(zone, status, err)
		}
	}
	if err := r.ensureCatalogMember(ctx, zone, t); err != nil {
		return r.report(zone, status, err)
	}
	inSync := r.observeSerials(ctx, t, status)
	if len(status.RejectedRecords) > 0 {
		first := status.RejectedRecords[0]
		setZoneCondition(zone, status, metav1.ConditionFalse, ReasonRecordsRefused,
			fmt.Sprintf("%d record set(s) of spec.records were not applied; first %s %s: %s %s (the others are served)", len(status.RejectedRecords), first.Name, first.Type, first.Rcode, first.Message))
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	if !inSync {
		setZoneCondition(zone, status, metav1.ConditionTrue, ReasonReplicating, fmt.Sprintf("the primary serves serial %d; some secondaries do not serve it yet", ptr.Deref(status.Serial, 0)))
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	setZoneCondition(zone, status, metav1.ConditionTrue, ReasonServed, fmt.Sprintf("zone %s is served by the primary (serial %d) and every secondary.", t.zoneName, ptr.Deref(status.Serial, 0)))
	return ctrl.Result{}, nil
}

// report turns an error into the Ready condition.
func (r *BindZoneReconciler) report(zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus, err error) (ctrl.Result, error) {
	var p *problem
	if errors.As(err, &p) {
		setZoneCondition(zone, status, metav1.ConditionFalse, p.reason, p.msg)
		return ctrl.Result{RequeueAfter: p.requeue}, nil
	}
	setZoneCondition(zone, status, metav1.ConditionFalse, ReasonAgentError, bounded(err.Error()))
	return ctrl.Result{}, err
}

// ensureOnPods adds (or modifies) the zone on the primary and, outside
// catalogs, on every secondary. It reports whether the primary added it now
// (a fresh zone, or one named lost).
func (r *BindZoneReconciler) ensureOnPods(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget) (bool, error) {
	var notify []string
	for _, s := range t.secondaries() {
		notify = append(notify, s.Notify)
	}
	prim := t.primary()
	clause, err := t.clause(prim, render.ZoneRolePrimary, notify)
	if err != nil {
		return false, err
	}
	soa := zone.Spec.SOA.DeepCopy()
	if soa == nil {
		soa = &bindv1alpha1.SOASpec{}
	}
	if soa.PrimaryNameServer == "" {
		// Outside the zone: a seed whose NS lies inside the zone without
		// glue does not load in 9.18, and the query Service's name is
		// where clients actually find the zone.
		soa.PrimaryNameServer = bindv1alpha1.DomainName(querySvcName(t.cluster) + "." + t.cluster.Namespace + ".svc.cluster.local.")
	}
	var ttl int32
	if zone.Spec.DefaultTTL != nil {
		ttl = int32(*zone.Spec.DefaultTTL)
	}
	seed := render.SeedZoneWithGlue(t.zoneName, soa, ttl, mnameGlue(t.zoneName, string(soa.PrimaryNameServer), zone.Spec.Records))
	ac, err := r.agents.get(ctx, t.cluster, prim.AgentAddr)
	if err != nil {
		return false, &problem{ReasonPrimaryNotReady, err.Error(), 10 * time.Second}
	}
	res, err := ac.EnsureZone(ctx, agent.EnsureZoneRequest{View: t.view, Zone: t.zoneName, Clause: clause, Seed: seed})
	if err != nil {
		return false, agentProblem(prim.Pod, err)
	}
	if res.Action == agent.ActionAdded || res.Action == agent.ActionModified {
		r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "Zone"+titleCase(res.Action), "Ensure", "zone %s %s on the primary %s", t.zoneName, res.Action, prim.Pod)
	}
	if zone.Spec.CatalogZoneRef == nil {
		for _, s := range t.secondaries() {
			sclause, err := t.clause(&s, render.ZoneRoleSecondary, nil)
			if err != nil {
				return false, err
			}
			sc, err := r.agents.get(ctx, t.cluster, s.AgentAddr)
			if err != nil {
				return false, &problem{ReasonAgentError, err.Error(), 10 * time.Second}
			}
			if _, err := sc.EnsureZone(ctx, agent.EnsureZoneRequest{View: t.view, Zone: t.zoneName, Clause: sclause}); err != nil {
				return false, agentProblem(s.Pod, err)
			}
		}
	}
	return res.Action == agent.ActionAdded, nil
}

// mnameGlue returns the addresses the zone declares for its SOA MNAME: the
// seed needs them when the MNAME lies inside the zone, or BIND 9.18 refuses
// to load it (the validating webhook makes sure they exist).
func mnameGlue(zoneName, mname string, sets []bindv1alpha1.RecordSet) []string {
	rel, err := records.RelativeName(zoneName, records.ZoneFQDN(mname))
	if err != nil {
		return nil
	}
	var glue []string
	for _, set := range sets {
		if n, err := records.RelativeName(zoneName, string(set.Name)); err == nil && n == rel && (set.Type == "A" || set.Type == "AAAA") {
			glue = append(glue, set.Values...)
		}
	}
	return glue
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// agentProblem reports an agent failure: a refusal (4xx) is the zone's
// problem and is not retried in a tight loop; anything else is retried.
func agentProblem(pod string, err error) error {
	var ae *agent.Error
	if errors.As(err, &ae) && ae.Invalid() {
		return &problem{ReasonInvalidZone, fmt.Sprintf("the agent of %s refused the zone: %s", pod, ae.Message), time.Minute}
	}
	return &problem{ReasonAgentError, bounded(fmt.Sprintf("the agent of %s: %v", pod, err)), 10 * time.Second}
}

// recordsDue tells whether this reconcile compares and applies spec.records:
// on a spec change, a fresh zone, a resync request, a past failure, or when
// the last check is older than the resync period.
func (r *BindZoneReconciler) recordsDue(zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus, added bool) bool {
	switch {
	case added, status.ObservedGeneration != zone.Generation, status.LastDriftCheck == nil,
		zone.Annotations[bindv1alpha1.AnnotationResync] != status.ObservedResync,
		len(status.RejectedRecords) > 0:
		return true
	}
	c := meta.FindStatusCondition(status.Conditions, bindv1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionTrue {
		return true
	}
	return time.Since(status.LastDriftCheck.Time) >= r.resyncPeriod()
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
	defaultTTL := records.DefaultTTL
	if zone.Spec.DefaultTTL != nil {
		defaultTTL = int32(*zone.Spec.DefaultTTL)
	}
	var rejected []bindv1alpha1.RejectedRecordSet
	var desired []bindv1alpha1.RecordSet
	seen := map[setKey]bool{}
	for i, s := range zone.Spec.Records {
		cs, errs := records.CanonicalizeSet(t.zoneName, s, defaultTTL, field.NewPath("spec", "records").Index(i))
		if len(errs) > 0 {
			rejected = append(rejected, bindv1alpha1.RejectedRecordSet{Name: string(s.Name), Type: string(s.Type), Message: bounded(errs.ToAggregate().Error())})
			continue
		}
		k := setKey{string(cs.Name), string(cs.Type)}
		if seen[k] {
			continue
		}
		seen[k] = true
		desired = append(desired, cs)
	}

	served, err := r.served(ctx, t)
	if err != nil {
		return err
	}
	prev := map[setKey]string{}
	for _, m := range status.ManagedRecords {
		prev[setKey{m.Name, m.Type}] = m.Digest
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
		errs := r.Updates.batcher.SubmitMany(ctx, t.srv, t.zoneName, changes)
		var transport error
		for i, err := range errs {
			o := owners[i]
			var rc *dnsclient.RcodeError
			switch {
			case err == nil:
				if o.Digest != "" {
					managed = append(managed, o)
				}
			case errors.As(err, &rc) && !errors.Is(err, errBatchAborted):
				name, typ := changes[i].Set.Name, dns.TypeToString[changes[i].Set.Type]
				if rel, rerr := records.RelativeName(t.zoneName, name); rerr == nil {
					name = rel
				}
				rejected = append(rejected, bindv1alpha1.RejectedRecordSet{Name: name, Type: typ, Rcode: rc.RcodeName(), Message: bounded(err.Error())})
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
				return &problem{ReasonRecordsRefused, bounded(fmt.Sprintf("the primary refused the zone's updates with %s: %v", rc.RcodeName(), transport)), 30 * time.Second}
			}
			return &problem{ReasonPrimaryNotReady, bounded(fmt.Sprintf("the updates did not reach the primary: %v", transport)), 10 * time.Second}
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

// served transfers the zone from the primary and groups it by set, values
// canonical and sorted. The transfer is untrusted input: records outside
// the zone or that do not canonicalise are skipped.
func (r *BindZoneReconciler) served(ctx context.Context, t *zoneTarget) (map[setKey]servedSet, error) {
	key := t.xfrKey
	if key == nil {
		k := t.srv.Key
		key = &k
	}
	c, err := dnsclient.New(t.srv.Addr, key, dnsclient.Options{Timeout: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rrs, err := c.AXFR(ctx, t.zoneName)
	if err != nil {
		var rc *dnsclient.RcodeError
		if errors.As(err, &rc) {
			return nil, &problem{ReasonRecordsRefused, bounded(fmt.Sprintf("the primary refused the zone transfer with %s: %v", rc.RcodeName(), err)), 30 * time.Second}
		}
		return nil, &problem{ReasonPrimaryNotReady, bounded(fmt.Sprintf("cannot transfer the zone from the primary: %v", err)), 10 * time.Second}
	}
	out := map[setKey]servedSet{}
	for _, rr := range rrs {
		h := rr.Header()
		typ := dns.TypeToString[h.Rrtype]
		if h.Rrtype == dns.TypeSOA || !records.IsSupported(typ) {
			continue
		}
		name, err := records.RelativeName(t.zoneName, dns.Fqdn(h.Name))
		if err != nil {
			continue
		}
		v, err := records.CanonicalValue(t.zoneName, name, typ, records.Rdata(rr))
		if err != nil {
			v = records.Rdata(rr)
		}
		k := setKey{name, typ}
		s := out[k]
		s.ttl = h.Ttl
		s.values = append(s.values, v)
		out[k] = s
	}
	for k, s := range out {
		slices.Sort(s.values)
		s.values = slices.Compact(s.values)
		out[k] = s
	}
	return out, nil
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

// ensureCatalogMember adds the zone's PTR to its catalog unless the
// primary already serves it.
func (r *BindZoneReconciler) ensureCatalogMember(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget) error {
	ref := zone.Spec.CatalogZoneRef
	if ref == nil {
		return nil
	}
	cat, key, err := r.catalog(ctx, zone.Namespace, ref.Name)
	if err != nil {
		return err
	}
	owner := catalogMemberOwner(cat, t.zoneName)
	want := []string{records.ZoneFQDN(t.zoneName)}
	if vals, _, err := servedValues(ctx, t.srv.Addr, owner, dns.TypePTR); err == nil && slices.Equal(vals, want) {
		return nil
	}
	srv := ZoneServer{Addr: t.srv.Addr, Key: key}
	err = r.Updates.batcher.Submit(ctx, srv, records.CanonicalZone(cat), dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{
		Name: owner, Type: dns.TypePTR, TTL: 0, Values: want,
	}})
	if err != nil {
		return &problem{ReasonRecordsRefused, bounded(fmt.Sprintf("adding the zone to catalog %s failed: %v", cat, err)), 30 * time.Second}
	}
	r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "CatalogMemberAdded", "Update", "zone %s added to catalog %s", t.zoneName, cat)
	if err := notifySecondaries(ctx, t.pods, cat, key); err != nil {
		r.Recorder.Eventf(zone, nil, corev1.EventTypeWarning, "NotifyFailed", "Notify", "the secondaries did not take the catalog NOTIFY (they catch up at the SOA refresh): %v", bounded(err.Error()))
	}
	return nil
}

// catalog returns a BindCatalogZone's zone name and its transfer key.
func (r *BindZoneReconciler) catalog(ctx context.Context, namespace, name string) (string, dnsclient.Key, error) {
	var cat bindv1alpha1.BindCatalogZone
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cat); err != nil {
		if apierrors.IsNotFound(err) {
			return "", dnsclient.Key{}, &problem{ReasonInvalidZone, fmt.Sprintf("BindCatalogZone %q does not exist; create it or fix spec.catalogZoneRef", name), 30 * time.Second}
		}
		return "", dnsclient.Key{}, err
	}
	key, err := loadUpdateKey(ctx, r.Client, namespace, cat.Spec.TransferKeyRef.Name)
	if err != nil {
		return "", dnsclient.Key{}, &problem{ReasonInvalidZone, err.Error(), 30 * time.Second}
	}
	return string(cat.Spec.ZoneName), key, nil
}

// observeSerials fills the primary's serial and each secondary's, and tells
// whether every secondary serves the primary's serial.
func (r *BindZoneReconciler) observeSerials(ctx context.Context, t *zoneTarget, status *bindv1alpha1.BindZoneStatus) bool {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	primary, err := soaSerial(qctx, t.primary().DNSAddr, t.zoneName)
	if err != nil {
		status.Serial = nil
		return false
	}
	status.Serial = ptr.To(int64(primary))
	all := true
	var secs []bindv1alpha1.SecondaryZoneStatus
	for _, s := range t.secondaries() {
		st := bindv1alpha1.SecondaryZoneStatus{Pod: s.Pod}
		if serial, err := soaSerial(qctx, s.DNSAddr, t.zoneName); err == nil {
			st.Serial = ptr.To(int64(serial))
			st.InSync = serial == primary
		}
		all = all && st.InSync
		secs = append(secs, st)
	}
	if len(secs) > 16 {
		secs = secs[:16]
	}
	status.Secondaries = secs
	return all
}

// soaSerial asks one named for a zone's serial (unsigned, TCP).
func soaSerial(ctx context.Context, addr, zone string) (uint32, error) {
	c, err := dnsclient.New(addr, nil, dnsclient.Options{Timeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.Serial(ctx, zone)
}

// finalize removes the zone from its catalog and from the pods, then lets
// the object go. A cluster that is gone releases it at once; failures are
// retried for deleteGiveUp, never forever.
func (r *BindZoneReconciler) finalize(ctx context.Context, zone *bindv1alpha1.BindZone) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(zone, zoneFinalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.removeFromPods(ctx, zone); err != nil {
		if time.Since(zone.DeletionTimestamp.Time) < deleteGiveUp {
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
		r.Recorder.Eventf(zone, nil, corev1.EventTypeWarning, "DeleteAbandoned", "Delete", "gave up removing zone %s from the cluster after %s: %v", zone.Spec.ZoneName, deleteGiveUp, err)
	}
	controllerutil.RemoveFinalizer(zone, zoneFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, zone))
}

func (r *BindZoneReconciler) removeFromPods(ctx context.Context, zone *bindv1alpha1.BindZone) error {
	var cluster bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: zone.Spec.ClusterRef.Name}, &cluster); err != nil {
		return client.IgnoreNotFound(err) // cluster gone: nothing left to clean
	}
	zoneName := records.CanonicalZone(string(zone.Spec.ZoneName))
	view := ""
	if zone.Spec.ViewRef != nil {
		view = zone.Spec.ViewRef.Name
	}
	if ref := zone.Spec.CatalogZoneRef; ref != nil {
		cat, key, err := r.catalog(ctx, zone.Namespace, ref.Name)
		var p *problem
		switch {
		case errors.As(err, &p):
			// The catalog or its key is gone: no membership to remove.
		case err != nil:
			return err
		default:
			addr, port, err := r.Endpoints.Transfer(ctx, &cluster)
			if err != nil {
				return err
			}
			srv := ZoneServer{Addr: joinHostPort(addr, port), Key: key}
			err = r.Updates.batcher.Submit(ctx, srv, records.CanonicalZone(cat), dnsclient.Change{
				Op: dnsclient.Delete, Set: dnsclient.RRSet{Name: catalogMemberOwner(cat, zoneName), Type: dns.TypePTR},
				Prev: []string{records.ZoneFQDN(zoneName)},
			})
			var rc *dnsclient.RcodeError
			if err != nil && !(errors.As(err, &rc) && rc.Rcode == dns.RcodeNXRrset) {
				return err
			}
			if err == nil {
				if pods, perr := r.Endpoints.Pods(ctx, &cluster); perr == nil {
					_ = notifySecondaries(ctx, pods, cat, key)
				}
			}
		}
	}
	pods, err := r.Endpoints.Pods(ctx, &cluster)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pods {
		if !p.Primary && zone.Spec.CatalogZoneRef != nil {
			continue // the catalog removal deletes the secondaries' copies
		}
		ac, err := r.agents.get(ctx, &cluster, p.AgentAddr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := ac.DeleteZone(ctx, agent.ZoneRef{View: view, Zone: zoneName}); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Pod, err))
		}
	}
	return errors.Join(errs...)
}

func setZoneCondition(zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: bindv1alpha1.ConditionReady, Status: s, Reason: reason, Message: bounded(msg), ObservedGeneration: zone.Generation})
}

func (r *BindZoneReconciler) patchStatus(ctx context.Context, zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus) error {
	if equality.Semantic.DeepEqual(&zone.Status, status) {
		return nil
	}
	base := zone.DeepCopy()
	zone.Status = *status
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, zone, client.MergeFrom(base)))
}

// bounded keeps a message (which may quote untrusted replies) printable and
// short enough for a condition.
func bounded(s string) string {
	const max = 2048
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

func joinHostPort(addr string, port int32) string {
	return net.JoinHostPort(addr, strconv.Itoa(int(port)))
}

// Field index of BindZones by cluster.
const indexZoneCluster = "spec.clusterRef.name"

// SetupWithManager registers the reconciler: zones re-apply when their
// spec or annotations change, when their cluster changes, and when a pod of
// their cluster gets a new IP (also-notify follows the secondaries).
func (r *BindZoneReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("bind-operator")
	}
	if r.Endpoints == nil {
		r.Endpoints = KubePods{Client: mgr.GetClient()}
	}
	if r.Servers == nil {
		r.Servers = ClusterResolver{Client: mgr.GetClient(), Endpoints: r.Endpoints}
	}
	if r.Updates == nil {
		r.Updates = NewUpdates(0, 0)
	}
	if r.Paths == (render.Paths{}) {
		r.Paths = render.DefaultPaths()
	}
	r.agents = &agentClients{Client: mgr.GetClient()}
	workers := r.MaxConcurrentReconciles
	if workers == 0 {
		workers = 8
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &bindv1alpha1.BindZone{}, indexZoneCluster, func(o client.Object) []string {
		return []string{o.(*bindv1alpha1.BindZone).Spec.ClusterRef.Name}
	}); err != nil {
		return err
	}
	zonesOf := func(ctx context.Context, namespace, cluster string) []reconcile.Request {
		var list bindv1alpha1.BindZoneList
		if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{indexZoneCluster: cluster}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, z := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&z)})
		}
		return reqs
	}
	podsChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
			return o.Status.PodIP != n.Status.PodIP
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindv1alpha1.BindZone{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{},
			predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return e.ObjectNew.GetDeletionTimestamp() != nil }},
		))).
		Watches(&bindv1alpha1.BindCluster{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return zonesOf(ctx, o.GetNamespace(), o.GetName())
		}), builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*bindv1alpha1.BindCluster), e.ObjectNew.(*bindv1alpha1.BindCluster)
			return o.Status.PrimaryAddress != n.Status.PrimaryAddress || o.Generation != n.Generation
		}})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			cluster := o.GetLabels()[bindv1alpha1.LabelCluster]
			if cluster == "" {
				return nil
			}
			return zonesOf(ctx, o.GetNamespace(), cluster)
		}), builder.WithPredicates(podsChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Named("bindzone").
		Complete(r)
}
