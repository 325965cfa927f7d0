package inputs

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/records"
	"git.unkin.net/unkin/bind-operator/render"
)

// GatherInput collects everything that shapes a cluster's config. List
// order from the API server is random; render sorts, so the order here does
// not matter (the determinism tests shuffle it on purpose). Objects rc
// refuses, and those that name them, are left out (leftOut).
func GatherInput(ctx context.Context, c client.Reader, rc *reconcileutil.Rechecks, cluster *bindv1alpha1.BindCluster, primaryAddress string, controlKey render.TSIGKey, paths render.Paths) (render.Input, error) {
	return gather(ctx, c, rc, cluster, nil, primaryAddress, controlKey, paths)
}

// GatherZoneInput collects what one zone's runtime clause needs: the
// cluster's shared objects (views, catalogs, policies, and the ACLs, keys
// and DNSSEC policies they or the zone name) and that zone alone. A
// BindZone reconcile that gathered every zone of its cluster made
// creating n zones cost O(n²): each reconcile copied all n out of the
// cache (docs/behaviours.md, "Scale"). The checks across zones stay with
// the BindCluster's render, which runs once per change.
func GatherZoneInput(ctx context.Context, c client.Reader, rc *reconcileutil.Rechecks, cluster *bindv1alpha1.BindCluster, zone *bindv1alpha1.BindZone, primaryAddress string, controlKey render.TSIGKey, paths render.Paths) (render.Input, error) {
	return gather(ctx, c, rc, cluster, zone, primaryAddress, controlKey, paths)
}

// gather is GatherInput, or GatherZoneInput when only is set.
func gather(ctx context.Context, c client.Reader, rc *reconcileutil.Rechecks, cluster *bindv1alpha1.BindCluster, only *bindv1alpha1.BindZone, primaryAddress string, controlKey render.TSIGKey, paths render.Paths) (render.Input, error) {
	ns := client.InNamespace(cluster.Namespace)
	out := newLeftOut(rc)
	in := render.Input{Cluster: cluster, PrimaryAddress: primaryAddress, PrimaryPort: clusterpods.ServicePort, ControlKey: controlKey, Paths: paths, Keys: map[string]render.TSIGKey{}}

	var views bindv1alpha1.BindViewList
	if err := c.List(ctx, &views, ns); err != nil {
		return in, err
	}
	in.Views = ofCluster(views.Items, cluster.Name, func(v *bindv1alpha1.BindView) string { return v.Spec.ClusterRef.Name })
	in.Views = keepValid(out, "BindView", in.Views, out.views)
	// The namespace's zones, listed once and only when needed: for every
	// zone of the cluster, or for the zones a forwarded-to cluster serves.
	namespaceZones := sync.OnceValues(func() ([]bindv1alpha1.BindZone, error) {
		var zones bindv1alpha1.BindZoneList
		err := c.List(ctx, &zones, ns)
		return zones.Items, err
	})
	if only != nil {
		in.Zones = []bindv1alpha1.BindZone{*only}
		if rc.Check(only) != "" {
			return in, &leftOutReferenceError{"the operator's current admission rules refuse the zone (its status says why)"}
		}
	} else {
		zones, err := namespaceZones()
		if err != nil {
			return in, err
		}
		in.Zones = ofCluster(zones, cluster.Name, configCluster)
		in.Zones = keepValid(out, "BindZone", in.Zones, nil)
	}
	var catalogs bindv1alpha1.BindCatalogZoneList
	if err := c.List(ctx, &catalogs, ns); err != nil {
		return in, err
	}
	in.Catalogs = ofCluster(catalogs.Items, cluster.Name, func(cat *bindv1alpha1.BindCatalogZone) string { return cat.Spec.ClusterRef.Name })
	in.Catalogs = keepValid(out, "BindCatalogZone", in.Catalogs, out.catalogs)
	var policies bindv1alpha1.BindPolicyList
	if err := c.List(ctx, &policies, ns); err != nil {
		return in, err
	}
	in.Policies = ofCluster(policies.Items, cluster.Name, func(p *bindv1alpha1.BindPolicy) string { return p.Spec.ClusterRef.Name })
	in.Policies = keepValid(out, "BindPolicy", in.Policies, nil)

	forwardees, err := gatherForwardees(ctx, c, &in, namespaceZones)
	if err != nil {
		return in, err
	}
	in.Forwardees = forwardees

	// ACLs, DNSSEC policies and keys have no clusterRef: they are shared in
	// the namespace and reach a cluster's config only when referenced.
	var acls bindv1alpha1.BindACLList
	if err := c.List(ctx, &acls, ns); err != nil {
		return in, err
	}
	var dnssec bindv1alpha1.BindDNSSECPolicyList
	if err := c.List(ctx, &dnssec, ns); err != nil {
		return in, err
	}
	var keys bindv1alpha1.BindTSIGKeyList
	if err := c.List(ctx, &keys, ns); err != nil {
		return in, err
	}
	acls.Items = keepValid(out, "BindACL", acls.Items, out.acls)
	dnssec.Items = keepValid(out, "BindDNSSECPolicy", dnssec.Items, out.dnssec)
	keys.Items = keepValid(out, "BindTSIGKey", keys.Items, out.keys)
	if err := out.cascade(&in, &acls.Items, only); err != nil {
		return in, err
	}
	refs := collectRefs(&in, acls.Items)
	for _, a := range acls.Items {
		if refs.acls[a.Name] {
			in.ACLs = append(in.ACLs, a)
		}
	}
	for _, p := range dnssec.Items {
		if refs.dnssec[p.Name] {
			in.DNSSECPolicies = append(in.DNSSECPolicies, p)
		}
	}
	for _, k := range keys.Items {
		if !refs.keys[k.Name] {
			continue
		}
		material, err := clusterpods.KeyMaterial(ctx, c, &k)
		if err != nil {
			return in, err
		}
		in.Keys[k.Name] = material
	}
	return in, nil
}

// ofCluster returns the items whose clusterRef names cluster; the kinds
// share no Go interface, so the caller says where each keeps it. The
// result is a new slice: the namespace's zones are shared with
// gatherForwardees and must not be filtered in place.
func ofCluster[T any](items []T, cluster string, clusterRef func(*T) string) []T {
	var out []T
	for i := range items {
		if clusterRef(&items[i]) == cluster {
			out = append(out, items[i])
		}
	}
	return out
}

// configCluster is the BindCluster whose config holds zone z: its
// spec.clusterRef, or none once z is being deleted, as its finalizer is
// taking it off the cluster's pods.
func configCluster(z *bindv1alpha1.BindZone) string {
	if z.DeletionTimestamp != nil {
		return ""
	}
	return z.Spec.ClusterRef.Name
}

// forwardTargets are the BindClusters the cluster's forwarders name.
func forwardTargets(in *render.Input) []string {
	var names []string
	if r := in.Cluster.Spec.Recursion; r != nil {
		names = append(names, ForwardedClusters(r.Forwarders)...)
	}
	for _, v := range in.Views {
		names = append(names, ForwardedClusters(v.Spec.Forwarders)...)
	}
	for _, z := range in.Zones {
		names = append(names, ForwardedClusters(z.Spec.Forwarders)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ForwardedClusters are the BindClusters a forwarders list names.
func ForwardedClusters(fw []bindv1alpha1.Forwarder) []string {
	var names []string
	for _, f := range fw {
		if f.ClusterRef != nil {
			names = append(names, f.ClusterRef.Name)
		}
	}
	return names
}

// gatherForwardees resolves the BindClusters that forwarders name to their
// query Service's ClusterIP, and lists the zones each serves with their DS
// records (for a signed zone) so a validating resolver can trust them. A
// cluster that does not exist, or whose query Service is not its own or
// has no ClusterIP yet, is left out: render then says so, and the
// BindCluster watches bring the config back once it is there.
func gatherForwardees(ctx context.Context, c client.Reader, in *render.Input, namespaceZones func() ([]bindv1alpha1.BindZone, error)) (map[string]render.Forwardee, error) {
	names := forwardTargets(in)
	if len(names) == 0 {
		return nil, nil
	}
	zones, err := namespaceZones()
	if err != nil {
		return nil, err
	}
	out := map[string]render.Forwardee{}
	for _, name := range names {
		var target bindv1alpha1.BindCluster
		if err := c.Get(ctx, client.ObjectKey{Namespace: in.Cluster.Namespace, Name: name}, &target); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		var svc corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: target.Namespace, Name: clusterpods.QuerySvcName(&target)}, &svc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if !metav1.IsControlledBy(&svc, &target) || svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
			continue
		}
		f := render.Forwardee{Address: svc.Spec.ClusterIP, Zones: map[string][]string{}}
		for _, z := range zones {
			if configCluster(&z) != name || !z.Spec.IsPrimary() {
				continue
			}
			var ds []string
			if z.Spec.DNSSECPolicyRef != nil && z.Status.DNSSEC != nil {
				ds = z.Status.DNSSEC.DS
			}
			f.Zones[records.CanonicalZone(string(z.Spec.ZoneName))] = ds
		}
		out[name] = f
	}
	return out, nil
}

type refSet struct{ acls, keys, dnssec map[string]bool }

// collectRefs finds the ACLs, keys and DNSSEC policies a cluster's objects
// refer to, following ACLs that name other ACLs or keys.
func collectRefs(in *render.Input, acls []bindv1alpha1.BindACL) refSet {
	r := refSet{acls: map[string]bool{}, keys: map[string]bool{}, dnssec: map[string]bool{}}
	addList := func(list []bindv1alpha1.AddressMatchElement) {
		for _, e := range list {
			if e.ACLRef != "" {
				r.acls[e.ACLRef] = true
			}
			if e.KeyRef != "" {
				r.keys[e.KeyRef] = true
			}
		}
	}
	addKey := func(ref *bindv1alpha1.LocalObjectReference) {
		if ref != nil {
			r.keys[ref.Name] = true
		}
	}
	addServers := func(list []bindv1alpha1.RemoteServer) {
		for _, s := range list {
			addKey(s.KeyRef)
		}
	}
	spec := in.Cluster.Spec
	addKey(spec.TransferKeyRef)
	addList(spec.AllowQuery)
	if spec.Recursion != nil {
		addList(spec.Recursion.AllowRecursion)
	}
	for _, v := range in.Views {
		addList(v.Spec.MatchClients)
		addList(v.Spec.MatchDestinations)
		addList(v.Spec.AllowRecursion)
	}
	for _, z := range in.Zones {
		addList(z.Spec.AllowTransfer)
		addList(z.Spec.AllowQuery)
		addKey(z.Spec.UpdateKeyRef)
		addServers(z.Spec.Primaries)
		addServers(z.Spec.ExternalSecondaries)
		if z.Spec.DNSSECPolicyRef != nil {
			r.dnssec[z.Spec.DNSSECPolicyRef.Name] = true
		}
	}
	for _, c := range in.Catalogs {
		addKey(&c.Spec.TransferKeyRef)
		addServers(c.Spec.DefaultPrimaries)
	}
	for _, p := range in.Policies {
		addServers(p.Spec.Primaries)
	}
	// ACLs may nest; follow them to a fixed point (bounded by the number of
	// ACLs, since each round adds at least one or stops).
	byName := map[string]*bindv1alpha1.BindACL{}
	for i := range acls {
		byName[acls[i].Name] = &acls[i]
	}
	for range len(acls) + 1 {
		grew := false
		for name := range r.acls {
			a, ok := byName[name]
			if !ok {
				continue
			}
			for _, e := range a.Spec.Entries {
				if e.ACLRef != "" && !r.acls[e.ACLRef] {
					r.acls[e.ACLRef] = true
					grew = true
				}
				if e.KeyRef != "" {
					r.keys[e.KeyRef] = true
				}
			}
		}
		if !grew {
			break
		}
	}
	return r
}
