package controllers

import (
	"fmt"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Names of the objects a BindCluster owns. They depend only on the
// cluster's name, so they are stable across reconciles.
func configMapName(c *bindv1alpha1.BindCluster) string   { return c.Name + "-config" }
func keysSecretName(c *bindv1alpha1.BindCluster) string  { return c.Name + "-keys" }
func statefulSetName(c *bindv1alpha1.BindCluster) string { return c.Name }
func headlessSvcName(c *bindv1alpha1.BindCluster) string { return c.Name + "-pods" }
func primarySvcName(c *bindv1alpha1.BindCluster) string  { return c.Name + "-primary" }
func querySvcName(c *bindv1alpha1.BindCluster) string    { return c.Name }

// querySvcFQDN is the query Service's DNS name in clusterDomain (empty:
// bindv1alpha1.DefaultClusterDomain), with the trailing dot.
func querySvcFQDN(c *bindv1alpha1.BindCluster, clusterDomain string) string {
	if clusterDomain == "" {
		clusterDomain = bindv1alpha1.DefaultClusterDomain
	}
	return querySvcName(c) + "." + c.Namespace + ".svc." + clusterDomain + "."
}

func primaryPodName(c *bindv1alpha1.BindCluster) string {
	return fmt.Sprintf("%s-0", statefulSetName(c))
}

// selectorLabels select every pod of a cluster.
func selectorLabels(c *bindv1alpha1.BindCluster) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     "bind",
		"app.kubernetes.io/instance": c.Name,
		bindv1alpha1.LabelCluster:    c.Name,
	}
}

// objectLabels are stamped on every object a cluster owns.
func objectLabels(c *bindv1alpha1.BindCluster) map[string]string {
	l := selectorLabels(c)
	l[bindv1alpha1.LabelManagedBy] = bindv1alpha1.ManagedByValue
	return l
}
