package clusters

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/imagepolicy"
	"git.unkin.net/unkin/bind-operator/internal/version"
)

// ClusterOptions are the operator-wide settings the BindCluster reconciler
// needs; cmd/manager fills them from flags.
type ClusterOptions struct {
	// BindImage is the BIND 9.18 image of clusters that pin none (an empty
	// spec.image): --bind-image. Empty: this release's, version.BindImage.
	BindImage string
	// AgentImage is the agent sidecar image of clusters that pin none:
	// --agent-image. Empty: the operator's own, version.OperatorImage.
	AgentImage string
	// AllowedImages are the prefixes a pinned spec.image or
	// spec.agentImage must start with for the cluster to be rolled; the
	// validating webhook admits by the same list (package imagepolicy).
	// Nil: the repositories of BindImage and AgentImage
	// (imagepolicy.DefaultAllowed); []string{imagepolicy.AllowAny}: any.
	AllowedImages []string
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

// bindImage and agentImage are the defaults of clusters that pin no image.
func (o ClusterOptions) bindImage() string {
	if o.BindImage != "" {
		return o.BindImage
	}
	return version.BindImage()
}

func (o ClusterOptions) agentImage() string {
	if o.AgentImage != "" {
		return o.AgentImage
	}
	return version.OperatorImage()
}

// images are the BIND and agent images c's pods run: its pins, else the
// operator's defaults, which follow its release.
func (o ClusterOptions) images(c *bindv1alpha1.BindCluster) (bind, agent string) {
	bind, agent = c.Spec.Image, c.Spec.AgentImage
	if bind == "" {
		bind = o.bindImage()
	}
	if agent == "" {
		agent = o.agentImage()
	}
	return bind, agent
}

// allowedImages is AllowedImages with its default.
func (o ClusterOptions) allowedImages() []string {
	if o.AllowedImages != nil {
		return o.AllowedImages
	}
	return imagepolicy.DefaultAllowed(o.bindImage(), o.agentImage())
}
