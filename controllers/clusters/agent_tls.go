package clusters

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/pki"
)

// renewBefore is how long before expiry an agent certificate is reissued.
const renewBefore = 30 * 24 * time.Hour

// agentTLS returns the keys-Secret entries the agents need (CA certificate,
// serving certificate and key), issuing or renewing what is missing or due.
// The entries stay out of the config hash: the agent reloads them on every
// handshake, so a renewal never restarts a pod.
func (r *BindClusterReconciler) agentTLS(ctx context.Context, cluster *bindv1alpha1.BindCluster, current map[string][]byte) (map[string][]byte, error) {
	caSecret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: clusterpods.AgentCASecretName(cluster)}, caSecret)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	ca, caErr := pki.LoadCA(caSecret.Data[agent.FileCA], caSecret.Data[agent.FileCAKey])
	changed := false
	if caErr != nil || pki.NeedsRenewal(caSecret.Data[agent.FileCA], renewBefore) {
		if ca, err = agent.NewCA(fmt.Sprintf("bind-operator agent CA %s/%s", cluster.Namespace, cluster.Name), agent.DefaultCAValidity); err != nil {
			return nil, err
		}
		caSecret.Data = map[string][]byte{agent.FileCA: ca.CertPEM, agent.FileCAKey: ca.KeyPEM}
		changed = true
	}
	if changed || !pki.SignedBy(caSecret.Data[agent.FileClientCert], ca.CertPEM) || pki.NeedsRenewal(caSecret.Data[agent.FileClientCert], renewBefore) {
		pair, err := agent.IssueClient(ca, "bind-operator", agent.DefaultLeafValidity)
		if err != nil {
			return nil, err
		}
		caSecret.Data[agent.FileClientCert], caSecret.Data[agent.FileClientKey] = pair.CertPEM, pair.KeyPEM
		changed = true
	}
	if changed {
		desired := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: clusterpods.AgentCASecretName(cluster), Namespace: cluster.Namespace, Labels: clusterpods.ObjectLabels(cluster)},
			Type:       corev1.SecretTypeOpaque,
			Data:       caSecret.Data,
		}
		if err := r.apply(ctx, cluster, desired); err != nil {
			return nil, err
		}
	}

	out := map[string][]byte{agent.FileCA: ca.CertPEM, agent.FileServerCert: current[agent.FileServerCert], agent.FileServerKey: current[agent.FileServerKey]}
	if !pki.SignedBy(out[agent.FileServerCert], ca.CertPEM) || pki.NeedsRenewal(out[agent.FileServerCert], renewBefore) {
		pair, err := agent.IssueServer(ca, agent.DefaultLeafValidity)
		if err != nil {
			return nil, err
		}
		out[agent.FileServerCert], out[agent.FileServerKey] = pair.CertPEM, pair.KeyPEM
	}
	return out, nil
}
