package controllers

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ClusterOptions are the operator-wide settings the BindCluster reconciler
// needs; cmd/manager fills them from flags.
type ClusterOptions struct {
	// BindImage is the default BIND 9.18 image when a cluster sets none
	// (bindv1alpha1.DefaultBindImage unless --bind-image says otherwise).
	BindImage string
	// AgentImage is the default agent sidecar image (the operator's own).
	AgentImage string
	// OperatorNamespace and OperatorPodLabels let the NetworkPolicy admit
	// the agent port only from the operator's pods.
	OperatorNamespace string
	OperatorPodLabels map[string]string
	// MetricsNamespaces selects the namespaces whose pods the NetworkPolicy
	// admits to the agents' metrics port (BIND's statistics: zone names and
	// query rates are not for every tenant). Nil means
	// DefaultMetricsNamespaces; an empty selector admits every namespace.
	MetricsNamespaces *metav1.LabelSelector
	// NamedCheckconf is the named-checkconf binary that vets every render
	// before it replaces a running config. Empty disables the check, which
	// the manager only allows when the binary is absent and says so.
	NamedCheckconf string
}

// DefaultMetricsNamespaces is the label a namespace carries when the
// pods in it (Prometheus) may scrape the agents' metrics:
// bind.unkin.net/metrics=allowed. --metrics-namespace-selector replaces it.
var DefaultMetricsNamespaces = metav1.LabelSelector{MatchLabels: map[string]string{"bind.unkin.net/metrics": "allowed"}}

// DefaultAgentImage is the agent sidecar image of clusters that name none
// when the manager is not given another (--agent-image). The BIND image's
// default is the API's, bindv1alpha1.DefaultBindImage.
const DefaultAgentImage = "git.unkin.net/unkin/bind-operator:latest"
