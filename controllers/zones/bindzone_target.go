package zones

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/inputs"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/render"
)

// zoneTarget is everything one reconcile needs to reach a zone's pods.
type zoneTarget struct {
	cluster   *bindv1alpha1.BindCluster
	zoneName  string // canonical
	view      string
	in        render.Input
	clauses   map[render.Paths]*render.ZoneClauses
	effective *bindv1alpha1.BindZone    // updateKeyRef filled with the operator key
	pods      []clusterpods.PodEndpoint // primary first
	srv       clusterpods.ZoneServer    // UPDATEs
	xfrKey    *dnsclient.Key            // K: transfers of the zone, catalog updates
	readKey   *dnsclient.Key            // signs serial queries: the view's key, nil outside views
}

// transferKey signs what reads the whole zone or its serial from the
// primary: the zone's transfer key, else the key its UPDATEs use.
func (t *zoneTarget) transferKey() *dnsclient.Key {
	if t.xfrKey != nil {
		return t.xfrKey
	}
	k := t.srv.Key
	return &k
}

// clause renders the zone's runtime clause for a pod (its own paths when
// the seam gives some).
func (t *zoneTarget) clause(p *clusterpods.PodEndpoint, role render.ZoneRole, notify []string) (string, error) {
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
			return "", &problem{bindv1alpha1.ReasonInvalidZone, err.Error(), time.Minute}
		}
		t.clauses[paths] = zc
	}
	if p == nil {
		return "", nil
	}
	c, err := zc.Clause(t.effective, role, notify)
	if err != nil {
		return "", &problem{bindv1alpha1.ReasonInvalidZone, err.Error(), time.Minute}
	}
	return c, nil
}

func (t *zoneTarget) primary() *clusterpods.PodEndpoint {
	if len(t.pods) > 0 && t.pods[0].Primary {
		return &t.pods[0]
	}
	return nil
}

func (t *zoneTarget) secondaries() []clusterpods.PodEndpoint {
	if t.primary() != nil {
		return t.pods[1:]
	}
	return t.pods
}

func (r *BindZoneReconciler) target(ctx context.Context, zone *bindv1alpha1.BindZone) (*zoneTarget, error) {
	var cluster bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: zone.Spec.ClusterRef.Name}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &problem{bindv1alpha1.ReasonClusterNotFound, fmt.Sprintf("BindCluster %q does not exist in this namespace; create it or fix spec.clusterRef", zone.Spec.ClusterRef.Name), 30 * time.Second}
		}
		return nil, err
	}
	t := &zoneTarget{cluster: &cluster, zoneName: string(zone.Spec.ZoneName)}
	if zone.Spec.ViewRef != nil {
		t.view = zone.Spec.ViewRef.Name
	}
	addr, port, err := r.Endpoints.Transfer(ctx, &cluster)
	if err != nil {
		return nil, &problem{bindv1alpha1.ReasonPrimaryNotReady, err.Error(), 10 * time.Second}
	}
	t.effective = zone.DeepCopy()
	in, err := inputs.GatherZoneInput(ctx, r.Client, r.Rechecks, &cluster, t.effective, addr, clauseControlKey, r.Paths)
	if err != nil {
		return nil, &problem{bindv1alpha1.ReasonInvalidZone, fmt.Sprintf("the zone's configuration inputs are incomplete: %v", err), 30 * time.Second}
	}
	in.PrimaryPort = port
	if err := r.targetKeys(ctx, t, &in); err != nil {
		return nil, err
	}
	t.in = in
	t.clauses = map[render.Paths]*render.ZoneClauses{}
	if _, err := t.clause(nil, render.ZoneRolePrimary, nil); err != nil {
		return nil, err
	}
	if t.pods, err = r.Endpoints.Pods(ctx, &cluster); err != nil {
		return nil, err
	}
	if t.primary() == nil {
		return nil, &problem{bindv1alpha1.ReasonPrimaryNotReady, fmt.Sprintf("the primary pod of BindCluster %q has no address yet", cluster.Name), 10 * time.Second}
	}
	if t.srv, err = r.Servers.Resolve(ctx, zone); err != nil {
		return nil, &problem{bindv1alpha1.ReasonPrimaryNotReady, err.Error(), 10 * time.Second}
	}
	return t, nil
}

// targetKeys settles which keys the zone's clause grants and the operator
// signs with. A zone in a view uses the view's key for everything (render
// grants it); any other zone is updated with its operator key
// (OperatorKeyRef: K, else the update key; a zone without updateKeyRef
// gets K as its effective one) and replicated with the cluster's transfer
// key K.
func (r *BindZoneReconciler) targetKeys(ctx context.Context, t *zoneTarget, in *render.Input) error {
	zone, cluster := t.effective, t.cluster
	in.Zones = []bindv1alpha1.BindZone{*zone}
	if len(in.Views) > 0 {
		data, err := clusterpods.KeysData(ctx, r.Client, cluster)
		if err != nil {
			return err
		}
		if in.ViewKeys, err = clusterpods.ViewKeys(data, in.Views, false); err != nil {
			return err
		}
		// Only the zone's own view matters to its clause: views whose
		// key is not there yet are left out rather than failing it.
		in.Views = slices.DeleteFunc(in.Views, func(v bindv1alpha1.BindView) bool {
			_, ok := in.ViewKeys[v.Name]
			return !ok
		})
	}
	if t.view != "" {
		k, ok := in.ViewKeys[t.view]
		if !ok {
			return &problem{bindv1alpha1.ReasonPrimaryNotReady, clusterpods.ViewKeyMissing(cluster, t.view).Error(), 5 * time.Second}
		}
		dk, err := dnsclient.NewKey(k.Name, k.Algorithm, k.Secret)
		if err != nil {
			return &problem{bindv1alpha1.ReasonInvalidZone, err.Error(), 30 * time.Second}
		}
		t.xfrKey, t.readKey = &dk, &dk
		return nil
	}

	keyObj, err := clusterpods.OperatorKeyRef(ctx, r.Client, cluster, zone)
	if err != nil {
		return &problem{bindv1alpha1.ReasonInvalidZone, err.Error(), time.Minute}
	}
	if zone.Spec.UpdateKeyRef == nil {
		zone.Spec.UpdateKeyRef = &bindv1alpha1.LocalObjectReference{Name: keyObj}
		in.Zones = []bindv1alpha1.BindZone{*zone}
	}
	if _, ok := in.Keys[keyObj]; !ok {
		var k bindv1alpha1.BindTSIGKey
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: keyObj}, &k); err != nil {
			return &problem{bindv1alpha1.ReasonInvalidZone, fmt.Sprintf("BindTSIGKey %q: %v", keyObj, err), 30 * time.Second}
		}
		m, err := clusterpods.KeyMaterial(ctx, r.Client, &k)
		if err != nil {
			return &problem{bindv1alpha1.ReasonInvalidZone, err.Error(), 30 * time.Second}
		}
		in.Keys[keyObj] = m
	}
	if xfr, err := clusterpods.TransferKeyRef(ctx, r.Client, cluster, zone); err == nil && xfr != "" {
		k, err := clusterpods.LoadUpdateKey(ctx, r.Client, zone.Namespace, xfr)
		if err != nil {
			return &problem{bindv1alpha1.ReasonInvalidZone, err.Error(), 30 * time.Second}
		}
		t.xfrKey = &k
	}
	return nil
}

// clauseControlKey stands in for the rndc control key when building zone
// clauses: render validates it, but no clause ever names it.
var clauseControlKey = render.TSIGKey{Name: bindv1alpha1.ControlKeyName, Algorithm: string(bindv1alpha1.TSIGHMACSHA256), Secret: base64.StdEncoding.EncodeToString(make([]byte, 32))}
