package clusterpods

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/render"
)

// Every BindView gets a TSIG key the operator generates and keeps in its
// cluster's keys Secret, like the control key: no BindTSIGKey, no material
// in any CR. The view's match-clients admits it first, and the operator
// signs everything about the view's zones with it (UPDATEs, transfers,
// NOTIFYs, serial and drift checks), so BIND picks the zone's view by key:
// the same zone name in two views gets each view's data, whatever pod
// addresses the messages come from.

// ViewKeyEntry is the keys Secret entry that holds a view's key material.
func ViewKeyEntry(view string) string { return "view-" + view + ".secret" }

// viewKeyAlgorithm is the algorithm of the views' keys.
const viewKeyAlgorithm = bindv1alpha1.TSIGHMACSHA256

// keptViewKey is a view's key as the keys Secret's data (current) holds
// it; its Secret is "" when the data has none.
func keptViewKey(current map[string][]byte, view string) render.TSIGKey {
	return render.TSIGKey{Name: bindv1alpha1.ViewKeyName(view), Algorithm: string(viewKeyAlgorithm), Secret: string(current[ViewKeyEntry(view)])}
}

// ViewKeys returns the key of each view, from the keys Secret's data
// (current). A view whose key is missing gets a new one when generate is
// set (the BindCluster controller, which writes the Secret); otherwise it
// is left out, and render reports it.
func ViewKeys(current map[string][]byte, views []bindv1alpha1.BindView, generate bool) (map[string]render.TSIGKey, error) {
	keys := make(map[string]render.TSIGKey, len(views))
	for _, v := range views {
		k := keptViewKey(current, v.Name)
		if k.Secret == "" {
			if !generate {
				continue
			}
			s, err := GenerateTSIGSecret(viewKeyAlgorithm)
			if err != nil {
				return nil, err
			}
			k.Secret = s
		}
		keys[v.Name] = k
	}
	return keys, nil
}

// KeepViewKeys stores the views' keys in the keys Secret's data. Keys of
// deleted views are not carried over: a view made again gets a new key.
func KeepViewKeys(data map[string][]byte, keys map[string]render.TSIGKey) {
	for view, k := range keys {
		data[ViewKeyEntry(view)] = []byte(k.Secret)
	}
}

// KeysData is the data of the cluster's keys Secret; nil before the
// BindCluster controller first wrote it.
func KeysData(ctx context.Context, c client.Reader, cluster *bindv1alpha1.BindCluster) (map[string][]byte, error) {
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: KeysSecretName(cluster)}, &s); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return s.Data, nil
}

// ViewKeyMissing says a view's key is not in the keys Secret yet.
func ViewKeyMissing(cluster *bindv1alpha1.BindCluster, view string) error {
	return fmt.Errorf("the key of BindView %q is not in the keys Secret of BindCluster %q yet; it appears once the cluster has reconciled the view", view, cluster.Name)
}

// ViewKey reads the key of a view from its cluster's keys Secret, as a
// key to sign with.
func ViewKey(ctx context.Context, c client.Reader, cluster *bindv1alpha1.BindCluster, view string) (dnsclient.Key, error) {
	data, err := KeysData(ctx, c, cluster)
	if err != nil {
		return dnsclient.Key{}, err
	}
	k := keptViewKey(data, view)
	if k.Secret == "" {
		return dnsclient.Key{}, ViewKeyMissing(cluster, view)
	}
	return dnsclient.NewKey(k.Name, k.Algorithm, k.Secret)
}
