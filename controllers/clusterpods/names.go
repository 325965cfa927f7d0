package clusterpods

import (
	"fmt"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Names of the objects a BindCluster owns. They depend only on the
// cluster's name, so they are stable across reconciles.
func ConfigMapName(c *bindv1alpha1.BindCluster) string   { return c.Name + "-config" }
func KeysSecretName(c *bindv1alpha1.BindCluster) string  { return c.Name + "-keys" }
func StatefulSetName(c *bindv1alpha1.BindCluster) string { return c.Name }
func HeadlessSvcName(c *bindv1alpha1.BindCluster) string { return c.Name + "-pods" }
func PrimarySvcName(c *bindv1alpha1.BindCluster) string  { return c.Name + "-primary" }
func QuerySvcName(c *bindv1alpha1.BindCluster) string    { return c.Name }

// QuerySvcFQDN is the query Service's DNS name in clusterDomain (empty:
// bindv1alpha1.DefaultClusterDomain), with the trailing dot.
func QuerySvcFQDN(c *bindv1alpha1.BindCluster, clusterDomain string) string {
	if clusterDomain == "" {
		clusterDomain = bindv1alpha1.DefaultClusterDomain
	}
	return QuerySvcName(c) + "." + c.Namespace + ".svc." + clusterDomain + "."
}

func PrimaryPodName(c *bindv1alpha1.BindCluster) string {
	return fmt.Sprintf("%s-0", StatefulSetName(c))
}

// SelectorLabels select every pod of a cluster.
func SelectorLabels(c *bindv1alpha1.BindCluster) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     "bind",
		"app.kubernetes.io/instance": c.Name,
		bindv1alpha1.LabelCluster:    c.Name,
	}
}

// ObjectLabels are stamped on every object a cluster owns.
func ObjectLabels(c *bindv1alpha1.BindCluster) map[string]string {
	l := SelectorLabels(c)
	l[bindv1alpha1.LabelManagedBy] = bindv1alpha1.ManagedByValue
	return l
}

// DNSPort is the port named listens on inside the cluster's pods.
func DNSPort(c *bindv1alpha1.BindCluster) int32 {
	if c.Spec.Ports.DNS == 0 {
		return bindv1alpha1.DefaultDNSPort
	}
	return c.Spec.Ports.DNS
}

// ServicePort is the DNS port of every Service, whatever port named
// listens on inside the pods.
const ServicePort = 53

// AgentCASecretName holds the CA key and the operator's client certificate.
// Only the operator reads it: every BIND pod mounts the keys Secret, so the
// CA key must not be there.
func AgentCASecretName(c *bindv1alpha1.BindCluster) string { return c.Name + "-agent-ca" }
