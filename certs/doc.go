// Package certs provides the admission webhooks' TLS certificate.
//
// Two modes exist. With cert-manager (config/certmanager) a self-signed
// Issuer bootstraps a CA, the CA issues the serving certificate into a
// Secret that the kubelet mounts into the manager's certificate folder, and
// cert-manager's cainjector writes the CA into the webhook configurations.
// controller-runtime's webhook server watches the mounted files
// (certwatcher), so a renewed certificate is served without a restart. This
// package has no code for that mode: it is all manifests.
//
// Without cert-manager, Manager does the same work itself ("self-managed"):
// it keeps a CA and a serving certificate in a Secret, writes them into the
// certificate folder, injects the CA bundle into the webhook configurations
// and rotates both certificates before they expire. The Secret is the single
// source of truth, so restarts and extra replicas reuse it instead of
// issuing afresh.
package certs
