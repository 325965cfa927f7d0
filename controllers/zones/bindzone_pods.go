package zones

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/records"
	"git.unkin.net/unkin/bind-operator/render"
)

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
	soa := r.soaSpec(zone, t)
	seed := render.SeedZoneWithGlue(t.zoneName, soa, zone.EffectiveDefaultTTL(), mnameGlue(t.zoneName, string(soa.PrimaryNameServer), zone.Spec.Records))
	ac, err := r.agents.Get(ctx, t.cluster, prim.AgentAddr)
	if err != nil {
		return false, &problem{bindv1alpha1.ReasonPrimaryNotReady, err.Error(), 10 * time.Second}
	}
	res, err := r.Zones.Ensure(ctx, clusterpods.AgentKey(t.cluster, prim.AgentAddr), ac, agent.EnsureZoneRequest{View: t.view, Zone: t.zoneName, Clause: clause, Seed: seed})
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
			sc, err := r.agents.Get(ctx, t.cluster, s.AgentAddr)
			if err != nil {
				return false, &problem{bindv1alpha1.ReasonAgentError, err.Error(), 10 * time.Second}
			}
			if _, err := r.Zones.Ensure(ctx, clusterpods.AgentKey(t.cluster, s.AgentAddr), sc, agent.EnsureZoneRequest{View: t.view, Zone: t.zoneName, Clause: sclause}); err != nil {
				return false, agentProblem(s.Pod, err)
			}
		}
	}
	return res.Action == agent.ActionAdded, nil
}

// soaSpec is spec.soa with the MNAME the operator picks when it names
// none: outside the zone (a seed whose NS lies inside the zone without glue
// does not load in 9.18), the query Service's name, where clients actually
// find the zone.
func (r *BindZoneReconciler) soaSpec(zone *bindv1alpha1.BindZone, t *zoneTarget) *bindv1alpha1.SOASpec {
	soa := zone.Spec.SOA.DeepCopy()
	if soa == nil {
		soa = &bindv1alpha1.SOASpec{}
	}
	if soa.PrimaryNameServer == "" {
		soa.PrimaryNameServer = bindv1alpha1.DomainName(clusterpods.QuerySvcFQDN(t.cluster, r.ClusterDomain))
	}
	return soa
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
		return &problem{bindv1alpha1.ReasonInvalidZone, fmt.Sprintf("the agent of %s refused the zone: %s", pod, ae.Message), time.Minute}
	}
	return &problem{bindv1alpha1.ReasonAgentError, agent.Bound(fmt.Sprintf("the agent of %s: %v", pod, err)), 10 * time.Second}
}

func (r *BindZoneReconciler) removeFromPods(ctx context.Context, zone *bindv1alpha1.BindZone) error {
	var cluster bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: zone.Spec.ClusterRef.Name}, &cluster); err != nil {
		return client.IgnoreNotFound(err) // cluster gone: nothing left to clean
	}
	zoneName := string(zone.Spec.ZoneName)
	view := ""
	if zone.Spec.ViewRef != nil {
		view = zone.Spec.ViewRef.Name
	}
	if err := r.removeCatalogMember(ctx, zone, &cluster, zoneName); err != nil {
		return err
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
		ac, err := r.agents.Get(ctx, &cluster, p.AgentAddr)
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
