package clusterpods

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/render"
)

// ZoneServer is where a zone's UPDATEs go and the key that signs them: the
// destination of the shared UPDATE batcher.
type ZoneServer = batch.Server

// ZoneServerResolver finds a zone's primary and update key. The operator
// resolves through the cluster's primary Service; the data-plane tests
// resolve to a named they started on loopback.
type ZoneServerResolver interface {
	Resolve(ctx context.Context, zone *bindv1alpha1.BindZone) (ZoneServer, error)
}

// ErrClusterGone means the zone's cluster does not exist: there is no
// server to update, and nothing left on one to clean up.
var ErrClusterGone = errors.New("the cluster does not exist")

// ClusterResolver sends UPDATEs to the zone's BindCluster primary, at its
// stable transfer address (the primary Service ClusterIP), signed with the
// key of the zone's view (viewkeys.go), else the zone's operator key (see
// OperatorKeyRef).
type ClusterResolver struct {
	Client client.Reader
	// Endpoints locates the primary; nil means KubePods (the cluster's
	// status). The data-plane tests point it at loopback.
	Endpoints PodEndpoints
}

// Resolve implements ZoneServerResolver.
func (r ClusterResolver) Resolve(ctx context.Context, zone *bindv1alpha1.BindZone) (ZoneServer, error) {
	var cluster bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: zone.Spec.ClusterRef.Name}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return ZoneServer{}, fmt.Errorf("BindCluster %q of zone %q: %w", zone.Spec.ClusterRef.Name, zone.Name, ErrClusterGone)
		}
		return ZoneServer{}, fmt.Errorf("BindCluster %q of zone %q: %w", zone.Spec.ClusterRef.Name, zone.Name, err)
	}
	eps := r.Endpoints
	if eps == nil {
		eps = KubePods{Client: r.Client}
	}
	addr, port, err := eps.Transfer(ctx, &cluster)
	if err != nil {
		return ZoneServer{}, err
	}
	server := net.JoinHostPort(addr, strconv.Itoa(int(port)))
	if ref := zone.Spec.ViewRef; ref != nil {
		key, err := ViewKey(ctx, r.Client, &cluster, ref.Name)
		if err != nil {
			return ZoneServer{}, err
		}
		return ZoneServer{Addr: server, Key: key, SignReads: true}, nil
	}
	keyObj, err := OperatorKeyRef(ctx, r.Client, &cluster, zone)
	if err != nil {
		return ZoneServer{}, err
	}
	key, err := LoadUpdateKey(ctx, r.Client, zone.Namespace, keyObj)
	if err != nil {
		return ZoneServer{}, err
	}
	return ZoneServer{Addr: server, Key: key}, nil
}

// OperatorKeyRef names the BindTSIGKey that signs the operator's own
// UPDATEs to a primary zone outside views (inline records, DNSRecords,
// SOA): the cluster's transfer key K (TransferKeyRef), else the zone's
// updateKeyRef. render.ZoneClauses picks the same key: with K, a zone
// whose updateKeyRef is another key grants K everything and has the agent
// judge the update key's UPDATEs, which may not touch the record sets the
// operator owns (docs/behaviours.md, "Owned record sets"); a zone without
// updateKeyRef is writable only by the operator (and by whoever holds K,
// i.e. the cluster's own pods). Key material never leaves the Secrets:
// the CRs and status hold only names.
func OperatorKeyRef(ctx context.Context, c client.Reader, cluster *bindv1alpha1.BindCluster, zone *bindv1alpha1.BindZone) (string, error) {
	k, err := TransferKeyRef(ctx, c, cluster, zone)
	if err != nil {
		return "", err
	}
	upd := ""
	if zone.Spec.UpdateKeyRef != nil {
		upd = zone.Spec.UpdateKeyRef.Name
	} else {
		upd = k // a zone without update key is updated with K
	}
	// render's rule (render.ZoneClauses picks the same key), on object
	// names rather than BIND names.
	if op, _ := render.OperatorUpdateKey("", k, upd); op != "" {
		return op, nil
	}
	return "", fmt.Errorf("BindZone %q has no updateKeyRef and BindCluster %q has no transfer key (spec.transferKeyRef or a BindCatalogZone), so no key may update the zone", zone.Name, cluster.Name)
}

// TransferKeyRef names the BindTSIGKey K that signs the zone's transfers and
// NOTIFYs between the cluster's pods, the way render.ZoneClauses.TransferKey
// picks it: the cluster's transferKeyRef, else the key of the zone's
// catalog, else the key of the cluster's only catalog. "" when none.
func TransferKeyRef(ctx context.Context, c client.Reader, cluster *bindv1alpha1.BindCluster, zone *bindv1alpha1.BindZone) (string, error) {
	if ref := cluster.Spec.TransferKeyRef; ref != nil {
		return ref.Name, nil
	}
	var cats bindv1alpha1.BindCatalogZoneList
	if err := c.List(ctx, &cats, client.InNamespace(cluster.Namespace)); err != nil {
		return "", err
	}
	var mine []bindv1alpha1.BindCatalogZone
	for _, cat := range cats.Items {
		if cat.Spec.ClusterRef.Name != cluster.Name {
			continue
		}
		if zone != nil && zone.Spec.CatalogZoneRef != nil && zone.Spec.CatalogZoneRef.Name == cat.Name {
			return cat.Spec.TransferKeyRef.Name, nil
		}
		mine = append(mine, cat)
	}
	if len(mine) == 1 {
		return mine[0].Spec.TransferKeyRef.Name, nil
	}
	return "", nil
}

// LoadUpdateKey reads a BindTSIGKey's material into a dnsclient.Key.
func LoadUpdateKey(ctx context.Context, c client.Reader, namespace, name string) (dnsclient.Key, error) {
	var k bindv1alpha1.BindTSIGKey
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &k); err != nil {
		return dnsclient.Key{}, fmt.Errorf("BindTSIGKey %q: %w", name, err)
	}
	material, err := KeyMaterial(ctx, c, &k)
	if err != nil {
		return dnsclient.Key{}, err
	}
	return dnsclient.NewKey(material.Name, material.Algorithm, material.Secret)
}
