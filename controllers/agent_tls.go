package controllers

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent/pki"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// renewBefore is how long before expiry an agent certificate is reissued.
const renewBefore = 30 * 24 * time.Hour

// agentCASecretName holds the CA key and the operator's client certificate.
// Only the operator reads it: every BIND pod mounts the keys Secret, so the
// CA key must not be there.
func agentCASecretName(c *bindv1alpha1.BindCluster) string { return c.Name + "-agent-ca" }

// agentTLS returns the keys-Secret entries the agents need (CA certificate,
// serving certificate and key), issuing or renewing what is missing or due.
// The entries stay out of the config hash: the agent reloads them on every
// handshake, so a renewal never restarts a pod.
func (r *BindClusterReconciler) agentTLS(ctx context.Context, cluster *bindv1alpha1.BindCluster, current map[string][]byte) (map[string][]byte, error) {
	caSecret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: agentCASecretName(cluster)}, caSecret)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	exists := err == nil
	ca, caErr := pki.LoadCA(caSecret.Data[pki.FileCA], caSecret.Data[pki.FileCAKey])
	changed := false
	if caErr != nil || pki.NeedsRenewal(caSecret.Data[pki.FileCA], renewBefore) {
		if ca, err = pki.NewCA(fmt.Sprintf("bind-operator agent CA %s/%s", cluster.Namespace, cluster.Name), pki.DefaultCAValidity); err != nil {
			return nil, err
		}
		caSecret.Data = map[string][]byte{pki.FileCA: ca.CertPEM, pki.FileCAKey: ca.KeyPEM}
		changed = true
	}
	if changed || !signedBy(caSecret.Data[pki.FileClientCert], ca.CertPEM) || pki.NeedsRenewal(caSecret.Data[pki.FileClientCert], renewBefore) {
		pair, err := ca.IssueClient("bind-operator", pki.DefaultLeafValidity)
		if err != nil {
			return nil, err
		}
		caSecret.Data[pki.FileClientCert], caSecret.Data[pki.FileClientKey] = pair.CertPEM, pair.KeyPEM
		changed = true
	}
	if changed {
		caSecret.Name, caSecret.Namespace = agentCASecretName(cluster), cluster.Namespace
		caSecret.Labels = objectLabels(cluster)
		caSecret.Type = corev1.SecretTypeOpaque
		if err := r.own(cluster, caSecret); err != nil {
			return nil, err
		}
		if exists {
			err = r.Client.Update(ctx, caSecret)
		} else {
			err = r.Client.Create(ctx, caSecret)
		}
		if err != nil {
			return nil, fmt.Errorf("agent CA secret: %w", err)
		}
	}

	out := map[string][]byte{pki.FileCA: ca.CertPEM, pki.FileServerCert: current[pki.FileServerCert], pki.FileServerKey: current[pki.FileServerKey]}
	if !signedBy(out[pki.FileServerCert], ca.CertPEM) || pki.NeedsRenewal(out[pki.FileServerCert], renewBefore) {
		pair, err := ca.IssueServer(pki.DefaultLeafValidity)
		if err != nil {
			return nil, err
		}
		out[pki.FileServerCert], out[pki.FileServerKey] = pair.CertPEM, pair.KeyPEM
	}
	return out, nil
}

// signedBy tells whether certPEM chains to caPEM.
func signedBy(certPEM, caPEM []byte) bool {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return false
	}
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil && !bytes.Equal(certPEM, caPEM)
}
