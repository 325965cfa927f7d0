package controllers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/dnsclient"
)

// ZoneServer is where a zone's UPDATEs go and the key that signs them.
type ZoneServer struct {
	// Addr is host:port of the zone's primary.
	Addr string
	// Key signs the UPDATEs; its secret never leaves dnsclient.Key.
	Key dnsclient.Key
}

// ZoneServerResolver finds a zone's primary and update key. The operator
// resolves through the cluster's primary Service; the data-plane tests
// resolve to a named they started on loopback.
type ZoneServerResolver interface {
	Resolve(ctx context.Context, zone *bindv1alpha1.BindZone) (ZoneServer, error)
}

// ErrClusterGone means the zone's cluster does not exist: there is no
// server to update, and nothing left on one to clean up.
var ErrClusterGone = errors.New("the cluster does not exist")

// ClusterResolver sends UPDATEs to the zone's BindCluster primary, at the
// address its status reports (the primary Service ClusterIP), signed with
// the zone's updateKeyRef.
type ClusterResolver struct {
	Client client.Reader
}

// Resolve implements ZoneServerResolver.
func (r ClusterResolver) Resolve(ctx context.Context, zone *bindv1alpha1.BindZone) (ZoneServer, error) {
	if zone.Spec.UpdateKeyRef == nil {
		return ZoneServer{}, fmt.Errorf("BindZone %q has no updateKeyRef; DNSRecords need the zone to accept signed updates", zone.Name)
	}
	var cluster bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: zone.Spec.ClusterRef.Name}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return ZoneServer{}, fmt.Errorf("BindCluster %q of zone %q: %w", zone.Spec.ClusterRef.Name, zone.Name, ErrClusterGone)
		}
		return ZoneServer{}, fmt.Errorf("BindCluster %q of zone %q: %w", zone.Spec.ClusterRef.Name, zone.Name, err)
	}
	if cluster.Status.PrimaryAddress == "" {
		return ZoneServer{}, fmt.Errorf("BindCluster %q has no primary address yet", cluster.Name)
	}
	key, err := loadUpdateKey(ctx, r.Client, zone.Namespace, zone.Spec.UpdateKeyRef.Name)
	if err != nil {
		return ZoneServer{}, err
	}
	return ZoneServer{Addr: net.JoinHostPort(cluster.Status.PrimaryAddress, strconv.Itoa(servicePort)), Key: key}, nil
}

// loadUpdateKey reads a BindTSIGKey's material into a dnsclient.Key.
func loadUpdateKey(ctx context.Context, c client.Reader, namespace, name string) (dnsclient.Key, error) {
	var k bindv1alpha1.BindTSIGKey
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &k); err != nil {
		return dnsclient.Key{}, fmt.Errorf("BindTSIGKey %q: %w", name, err)
	}
	material, err := keyMaterial(ctx, c, &k)
	if err != nil {
		return dnsclient.Key{}, err
	}
	return dnsclient.NewKey(material.Name, material.Algorithm, material.Secret)
}
