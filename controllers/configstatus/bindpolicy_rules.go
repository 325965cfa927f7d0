package configstatus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/records"
	"git.unkin.net/unkin/bind-operator/render"
)

// policyApplyTimeout bounds one pod's apply (the agent waits for named to
// load the zone).
const policyApplyTimeout = 15 * time.Second

// enforcePolicy brings the policy's rules to every pod of its cluster,
// through each pod's agent, in every view that holds the policy zone: the
// rules are zone data, not config, so an edit reaches running pods without
// a roll (a new pod starts from the seed in the ConfigMap). Ready says
// whether every pod enforces the current rules.
func (r *ConfigStatusReconciler) enforcePolicy(ctx context.Context, p *bindv1alpha1.BindPolicy, status *bindv1alpha1.BindPolicyStatus) {
	notReady := func(format string, args ...any) {
		reconcileutil.SetCondition(&status.Conditions, p, bindv1alpha1.ConditionReady, metav1.ConditionFalse, bindv1alpha1.ReasonPolicyNotLoaded, agent.Bound(fmt.Sprintf(format, args...)))
	}
	var c bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Spec.ClusterRef.Name}, &c); err != nil {
		notReady("cannot read BindCluster %q: %v", p.Spec.ClusterRef.Name, err)
		return
	}
	recs, err := render.PolicyRecords(p)
	if err != nil {
		notReady("the rules cannot be turned into a policy zone: %v", err)
		return
	}
	views, err := r.policyViews(ctx, p, &c)
	if err != nil {
		notReady("cannot list the views of BindCluster %q: %v", c.Name, err)
		return
	}
	pods, err := r.Endpoints.Pods(ctx, &c)
	if err != nil || len(pods) == 0 {
		notReady("BindCluster %q has no running pods to enforce the rules on yet.", c.Name)
		return
	}
	zone := records.CanonicalZone(string(p.Spec.ZoneName))
	if len(p.Spec.Primaries) > 0 {
		r.observeFeed(ctx, p, &c, pods, views, zone, status)
		return
	}
	req := agent.PolicyRequest{Zone: zone, Policy: p.Name, Records: make([]agent.PolicyRecord, len(recs))}
	for i, rec := range recs {
		req.Records[i] = agent.PolicyRecord(rec)
	}
	failed := r.onEveryPod(ctx, &c, pods, views, func(ctx context.Context, ac *agent.Client, view string) error {
		req := req
		req.View = view
		_, err := ac.ApplyPolicy(ctx, req)
		return err
	})
	if len(failed) > 0 {
		notReady("%d of %d pod(s) of BindCluster %q do not enforce the current rules yet: %s", len(failed), len(pods)*len(views), c.Name, strings.Join(failed, "; "))
		return
	}
	reconcileutil.SetCondition(&status.Conditions, p, bindv1alpha1.ConditionReady, metav1.ConditionTrue, bindv1alpha1.ReasonPolicyLoaded,
		fmt.Sprintf("every pod of BindCluster %q (%d) enforces the %d rule(s) in policy zone %s (digest %s).", c.Name, len(pods), len(recs), req.Zone, render.PolicyDigest(recs)))
}

// observeFeed reports whether every pod has transferred a feed's policy
// zone from its primaries (named's zone status through the agent).
func (r *ConfigStatusReconciler) observeFeed(ctx context.Context, p *bindv1alpha1.BindPolicy, c *bindv1alpha1.BindCluster, pods []clusterpods.PodEndpoint, views []string, zone string, status *bindv1alpha1.BindPolicyStatus) {
	var mu sync.Mutex
	serials := map[uint32]bool{}
	missing := r.onEveryPod(ctx, c, pods, views, func(ctx context.Context, ac *agent.Client, view string) error {
		st, err := ac.ZoneStatus(ctx, agent.ZoneRef{View: view, Zone: zone})
		if err != nil {
			return err
		}
		if !st.Loaded {
			return errors.New("no transfer yet")
		}
		mu.Lock()
		serials[st.Serial] = true
		mu.Unlock()
		return nil
	})
	if len(missing) > 0 {
		reconcileutil.SetCondition(&status.Conditions, p, bindv1alpha1.ConditionReady, metav1.ConditionFalse, bindv1alpha1.ReasonPolicyNotLoaded,
			agent.Bound(fmt.Sprintf("%d of %d pod(s) of BindCluster %q have not transferred the feed %s from its primaries: %s", len(missing), len(pods)*len(views), c.Name, zone, strings.Join(missing, "; "))))
		return
	}
	reconcileutil.SetCondition(&status.Conditions, p, bindv1alpha1.ConditionReady, metav1.ConditionTrue, bindv1alpha1.ReasonPolicyLoaded,
		fmt.Sprintf("every pod of BindCluster %q (%d) transferred the feed %s from its primaries (serials %v).", c.Name, len(pods), zone, slices.Sorted(maps.Keys(serials))))
}

// onEveryPod runs call against every pod's agent for every view, all at
// once (an edit is enforced when the slowest pod has it), each bounded by
// policyApplyTimeout. It returns one "pod (view v): error" per failure.
func (r *ConfigStatusReconciler) onEveryPod(ctx context.Context, c *bindv1alpha1.BindCluster, pods []clusterpods.PodEndpoint, views []string, call func(context.Context, *agent.Client, string) error) []string {
	errs := make([]string, len(pods)*len(views))
	var wg sync.WaitGroup
	for i, pod := range pods {
		for j, view := range views {
			wg.Go(func() {
				err := func() error {
					ac, err := r.agents.Get(ctx, c, pod.AgentAddr)
					if err != nil {
						return err
					}
					ctx, cancel := context.WithTimeout(ctx, policyApplyTimeout)
					defer cancel()
					return call(ctx, ac, view)
				}()
				if err != nil {
					where := pod.Pod
					if view != "" {
						where += " (view " + view + ")"
					}
					errs[i*len(views)+j] = where + ": " + err.Error()
				}
			})
		}
	}
	wg.Wait()
	return slices.DeleteFunc(errs, func(e string) bool { return e == "" })
}

// policyViews are the views that hold the policy zone, as the render puts
// it: its viewRef, else every view of the cluster, else the top level ("").
func (r *ConfigStatusReconciler) policyViews(ctx context.Context, p *bindv1alpha1.BindPolicy, c *bindv1alpha1.BindCluster) ([]string, error) {
	if p.Spec.ViewRef != nil {
		return []string{p.Spec.ViewRef.Name}, nil
	}
	var list bindv1alpha1.BindViewList
	if err := r.Client.List(ctx, &list, client.InNamespace(p.Namespace)); err != nil {
		return nil, err
	}
	var views []string
	for _, v := range list.Items {
		if v.Spec.ClusterRef.Name == c.Name {
			views = append(views, v.Name)
		}
	}
	if len(views) == 0 {
		return []string{""}, nil
	}
	slices.Sort(views)
	return views, nil
}
