package zones

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/records"
)

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
	owner := clusterpods.CatalogMemberOwner(cat, t.zoneName)
	want := []string{records.ZoneFQDN(t.zoneName)}
	if vals, _, err := clusterpods.ServedValues(ctx, t.srv, owner, dns.TypePTR); err == nil && slices.Equal(vals, want) {
		return nil
	}
	srv := clusterpods.ZoneServer{Addr: t.srv.Addr, Key: key}
	err = r.Updates.Submit(ctx, srv, cat, dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{
		Name: owner, Type: dns.TypePTR, TTL: 0, Values: want,
	}})
	if err != nil {
		return &problem{bindv1alpha1.ReasonRecordsRefused, agent.Bound(fmt.Sprintf("adding the zone to catalog %s failed: %v", cat, err)), 30 * time.Second}
	}
	r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "CatalogMemberAdded", "Update", "zone %s added to catalog %s", t.zoneName, cat)
	if err := clusterpods.NotifySecondaries(ctx, t.pods, cat, key); err != nil {
		r.Recorder.Eventf(zone, nil, corev1.EventTypeWarning, "NotifyFailed", "Notify", "the secondaries did not take the catalog NOTIFY (they catch up at the SOA refresh): %v", agent.Bound(err.Error()))
	}
	return nil
}

// catalog returns a BindCatalogZone's zone name and its transfer key.
func (r *BindZoneReconciler) catalog(ctx context.Context, namespace, name string) (string, dnsclient.Key, error) {
	var cat bindv1alpha1.BindCatalogZone
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cat); err != nil {
		if apierrors.IsNotFound(err) {
			return "", dnsclient.Key{}, &problem{bindv1alpha1.ReasonInvalidZone, fmt.Sprintf("BindCatalogZone %q does not exist; create it or fix spec.catalogZoneRef", name), 30 * time.Second}
		}
		return "", dnsclient.Key{}, err
	}
	key, err := clusterpods.LoadUpdateKey(ctx, r.Client, namespace, cat.Spec.TransferKeyRef.Name)
	if err != nil {
		return "", dnsclient.Key{}, &problem{bindv1alpha1.ReasonInvalidZone, err.Error(), 30 * time.Second}
	}
	return string(cat.Spec.ZoneName), key, nil
}

// removeCatalogMember deletes the zone's PTR from its catalog, guarded by
// the value it added, so the secondaries drop their copies; a catalog (or
// key) that is gone has no membership left to remove.
func (r *BindZoneReconciler) removeCatalogMember(ctx context.Context, zone *bindv1alpha1.BindZone, cluster *bindv1alpha1.BindCluster, zoneName string) error {
	ref := zone.Spec.CatalogZoneRef
	if ref == nil {
		return nil
	}
	cat, key, err := r.catalog(ctx, zone.Namespace, ref.Name)
	var p *problem
	switch {
	case errors.As(err, &p):
		// The catalog or its key is gone: no membership to remove.
	case err != nil:
		return err
	default:
		addr, port, err := r.Endpoints.Transfer(ctx, cluster)
		if err != nil {
			return err
		}
		srv := clusterpods.ZoneServer{Addr: clusterpods.JoinHostPort(addr, port), Key: key}
		err = r.Updates.Submit(ctx, srv, cat, dnsclient.Change{
			Op: dnsclient.Delete, Set: dnsclient.RRSet{Name: clusterpods.CatalogMemberOwner(cat, zoneName), Type: dns.TypePTR},
			Prev: []string{records.ZoneFQDN(zoneName)},
		})
		var rc *dnsclient.RcodeError
		if err != nil && !(errors.As(err, &rc) && rc.Rcode == dns.RcodeNXRrset) {
			return err
		}
		if err == nil {
			if pods, perr := r.Endpoints.Pods(ctx, cluster); perr == nil {
				_ = clusterpods.NotifySecondaries(ctx, pods, cat, key)
			}
		}
	}
	return nil
}
