package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterMode says what a BindCluster serves.
// +kubebuilder:validation:Enum=Authoritative;Resolver
type ClusterMode string

const (
	// ModeAuthoritative serves zones and refuses recursion.
	ModeAuthoritative ClusterMode = "Authoritative"
	// ModeResolver resolves recursively for the clients it allows.
	ModeResolver ClusterMode = "Resolver"
)

// DNSSECValidation is BIND's dnssec-validation setting.
// +kubebuilder:validation:Enum=Auto;Yes;No
type DNSSECValidation string

const (
	// DNSSECValidationAuto validates with BIND's built-in trust anchor.
	DNSSECValidationAuto DNSSECValidation = "Auto"
	// DNSSECValidationYes validates with configured trust anchors.
	DNSSECValidationYes DNSSECValidation = "Yes"
	// DNSSECValidationNo does not validate.
	DNSSECValidationNo DNSSECValidation = "No"
)

// BindClusterSpec describes a StatefulSet of BIND pods. Ordinal 0 is the
// primary; the other ordinals are secondaries that replicate from it.
// +kubebuilder:validation:XValidation:rule="self.mode == 'Resolver' || !has(self.recursion)",message="recursion settings only apply to a Resolver cluster; set mode: Resolver or remove spec.recursion."
type BindClusterSpec struct {
	// mode is Authoritative (serve zones, no recursion) or Resolver
	// (recursive resolution for allowed clients). It cannot change after
	// creation: create a new BindCluster instead.
	// +optional
	// +kubebuilder:default=Authoritative
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="mode is immutable; create a new BindCluster with the other mode instead."
	Mode ClusterMode `json:"mode,omitempty"`

	// replicas is the number of BIND pods: one primary and replicas-1
	// secondaries. Defaults to 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=15
	Replicas *int32 `json:"replicas,omitempty"`

	// image is the BIND 9.18 container image. Empty: the operator's
	// default image (--bind-image), which follows the operator's release;
	// set it to pin an image. It must start with one of the operator's
	// allowed prefixes (--allowed-images); a cluster whose pinned image
	// is no longer allowed is not rolled (Ready reason ImageNotAllowed).
	// status.image is the image the pods run.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.matches('[[:space:]]')",message="an image reference such as registry.example/bind9:9.18 has no whitespace; remove it."
	Image string `json:"image,omitempty"`

	// agentImage is the bind-operator image that runs the agent sidecar.
	// Empty: the operator's default image (--agent-image, its own image),
	// which follows the operator's release; set it to pin an image. The
	// allowed prefixes apply as to image. status.agentImage is the image
	// the pods run.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	AgentImage string `json:"agentImage,omitempty"`

	// imagePullPolicy applies to both containers.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// imagePullSecrets are passed to the pods.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// resources of the named container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// agentResources of the agent sidecar.
	// +optional
	AgentResources corev1.ResourceRequirements `json:"agentResources,omitempty"`

	// nodeSelector constrains the pods to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the pods.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity of the pods. Without one the operator prefers to spread the
	// pods over nodes.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// topologySpreadConstraints of the pods.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// priorityClassName of the pods.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// podAnnotations are added to every pod.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// ports named and the agent listen on.
	// +optional
	// +kubebuilder:default={}
	Ports ClusterPorts `json:"ports,omitempty"`

	// storage for each pod's data (zone files, journals, DNSSEC keys), so
	// dynamic updates and keys survive the pod. The primary's claim is the
	// one that matters: secondaries transfer their zones again.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`

	// primaryService is the stable transfer address of the primary.
	// +optional
	PrimaryService ServiceSpec `json:"primaryService,omitempty"`

	// queryService fronts every ready pod for clients.
	// +optional
	QueryService ServiceSpec `json:"queryService,omitempty"`

	// transferKeyRef names the BindTSIGKey that signs zone transfers and
	// NOTIFYs between the primary and the secondaries. Without it the key of
	// the cluster's catalog zone is used.
	// +optional
	TransferKeyRef *LocalObjectReference `json:"transferKeyRef,omitempty"`

	// allowQuery limits who may query the cluster. Defaults to any.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	AllowQuery []AddressMatchElement `json:"allowQuery,omitempty"`

	// recursion configures a Resolver cluster.
	// +optional
	Recursion *RecursionSpec `json:"recursion,omitempty"`

	// tuning holds the replication timers. The defaults make a change reach
	// the secondaries in milliseconds instead of BIND's ~5 seconds per hop.
	// +optional
	// +kubebuilder:default={}
	Tuning ReplicationTuning `json:"tuning,omitempty"`

	// extraOptions are additional statements for BIND's options block, one
	// statement per item, each ending with ";". The validating webhook
	// rejects statements that would escape the block or that name pod IPs.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=1024
	// +listType=atomic
	ExtraOptions []string `json:"extraOptions,omitempty"`

	// queryLog turns on BIND's query logging.
	// +optional
	QueryLog bool `json:"queryLog,omitempty"` //nolint:kubeapilinter // unset is false, the default: nothing fills it, so an explicit false is never replaced
}

// ClusterPorts are the container ports of a BIND pod.
// +kubebuilder:validation:XValidation:rule="!has(self.dns) || ((!has(self.agent) || self.dns != self.agent) && (!has(self.metrics) || self.dns != self.metrics))",message="the dns port must differ from the agent and metrics ports; each listener needs its own port.",fieldPath=".dns"
// +kubebuilder:validation:XValidation:rule="!has(self.agent) || !has(self.metrics) || self.agent != self.metrics",message="the metrics port must differ from the agent port; each listener needs its own port.",fieldPath=".metrics"
type ClusterPorts struct {
	// dns is the port named answers on, TCP and UDP. Defaults to 53.
	// +optional
	// +kubebuilder:default=53
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	DNS int32 `json:"dns,omitempty"`

	// agent is the port of the agent's authenticated API. Defaults to 8453.
	// +optional
	// +kubebuilder:default=8453
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Agent int32 `json:"agent,omitempty"`

	// metrics is the port of the agent's Prometheus metrics. Defaults to 9119.
	// +optional
	// +kubebuilder:default=9119
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Metrics int32 `json:"metrics,omitempty"`
}

// StorageMedium is where the emptyDir of a cluster without persistent
// storage keeps named's data.
// +kubebuilder:validation:Enum=Disk;Memory
type StorageMedium string

const (
	// StorageMediumDisk keeps the data on the node's disk (the default).
	StorageMediumDisk StorageMedium = "Disk"
	// StorageMediumMemory keeps the data in a tmpfs.
	StorageMediumMemory StorageMedium = "Memory"
)

// StorageSpec is the data volume of the pods: a PersistentVolumeClaim per
// pod, or an emptyDir when enabled is false.
// +kubebuilder:validation:XValidation:rule="!has(self.size) || !has(self.enabled) || self.enabled",message="storage.size has no effect while storage.enabled is false; enable storage or remove the size.",fieldPath=".size"
// +kubebuilder:validation:XValidation:rule="!has(self.medium) || (has(self.enabled) && !self.enabled)",message="medium applies to the emptyDir used while storage.enabled is false; set enabled: false, or remove the medium to keep the claims.",fieldPath=".medium"
// +kubebuilder:validation:XValidation:rule="!has(self.sizeLimit) || (has(self.enabled) && !self.enabled)",message="sizeLimit applies to the emptyDir used while storage.enabled is false; set enabled: false, or use size for the claims.",fieldPath=".sizeLimit"
type StorageSpec struct {
	// enabled creates a PersistentVolumeClaim for each pod. When false the
	// pods keep their data in an emptyDir, which lives as long as the pod:
	// it survives a container restart, and a new pod is seeded again.
	// Defaults to true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// medium of the emptyDir while enabled is false. Disk (the default)
	// keeps it on the node's disk. Memory keeps it in a tmpfs: the journal
	// fsyncs BIND makes between applying an UPDATE and sending its NOTIFYs,
	// and before a secondary serves a transfer, then cost nothing, so a
	// change reaches the secondaries without waiting on the node's disk.
	// The volume lives exactly as long as on Disk, but its zone files and
	// journals count against the pod's memory: give named a memory limit
	// with headroom for them, and set sizeLimit.
	// +optional
	Medium StorageMedium `json:"medium,omitempty"`

	// sizeLimit of the emptyDir while enabled is false. With medium Memory
	// it is the size of the tmpfs, whose files count against named's
	// memory: keep it below named's memory limit (without it the tmpfs may
	// grow to the node's memory). On Disk the kubelet evicts a pod whose
	// volume outgrows it.
	// +optional
	SizeLimit *resource.Quantity `json:"sizeLimit,omitempty"`

	// size of the claim. Defaults to 1Gi.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// storageClassName of the claim; empty uses the cluster default.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// ServiceSpec shapes a Service the operator creates.
type ServiceSpec struct {
	// type of the Service. Defaults to ClusterIP.
	// +optional
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	Type corev1.ServiceType `json:"type,omitempty"`

	// annotations added to the Service, e.g. for a load balancer.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// labels added to the Service.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// RecursionSpec configures recursive resolution.
// +kubebuilder:validation:XValidation:rule="!has(self.forwardPolicy) || self.forwardPolicy != 'Only' || (has(self.forwarders) && size(self.forwarders) > 0)",message="forwardPolicy Only needs at least one forwarder; add forwarders or use First.",fieldPath=".forwardPolicy"
type RecursionSpec struct {
	// allowRecursion lists the clients that may recurse. Defaults to
	// localnets and localhost; never "any" unless set explicitly.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	AllowRecursion []AddressMatchElement `json:"allowRecursion,omitempty"`

	// forwarders receive every query the resolver cannot answer itself.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Forwarders []Forwarder `json:"forwarders,omitempty"`

	// forwardPolicy is First (fall back to iteration) or Only. Defaults to First.
	// +optional
	ForwardPolicy ForwardPolicy `json:"forwardPolicy,omitempty"`

	// dnssecValidation is Auto (validate with the built-in trust anchor),
	// Yes (validate with configured anchors) or No. Defaults to Auto.
	// +optional
	DNSSECValidation DNSSECValidation `json:"dnssecValidation,omitempty"`
}

// ReplicationTuning holds the timers that decide how fast a change reaches
// the secondaries. BIND's defaults (notify-delay 5, rates of 20/s, catalog
// min-update-interval 5) cost seconds per hop; the operator's defaults cost
// milliseconds. Every value is overridable.
type ReplicationTuning struct {
	// notifyDelay is the primary's notify-delay in seconds. Defaults to 0.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	NotifyDelay *int32 `json:"notifyDelay,omitempty"`

	// notifyRate is the primary's notify-rate (NOTIFYs per second).
	// Defaults to 10000: BIND's limiter ticks every 10/rate seconds, and a
	// NOTIFY to the second secondary waits for the next tick.
	// +optional
	// +kubebuilder:default=10000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	NotifyRate *int32 `json:"notifyRate,omitempty"`

	// startupNotifyRate is the primary's startup-notify-rate (the NOTIFYs
	// of a zone just loaded or added). Defaults to 10000.
	// +optional
	// +kubebuilder:default=10000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	StartupNotifyRate *int32 `json:"startupNotifyRate,omitempty"`

	// serialQueryRate is the secondaries' serial-query-rate (SOA queries per
	// second). Defaults to 10000.
	// +optional
	// +kubebuilder:default=10000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	SerialQueryRate *int32 `json:"serialQueryRate,omitempty"`

	// catalogMinUpdateInterval is the catalog zones' min-update-interval in
	// seconds on the secondaries. Defaults to 0.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	CatalogMinUpdateInterval *int32 `json:"catalogMinUpdateInterval,omitempty"`
}

// BindClusterStatus is the observed state of a BindCluster.
type BindClusterStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, ConfigValid and Progressing.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// replicas is the number of pods the StatefulSet runs.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// readyReplicas is the number of pods whose zones are loaded.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// primaryAddress is where secondaries transfer from: the primary
	// Service's ClusterIP, or the primary pod's IP while no ClusterIP exists.
	// +optional
	PrimaryAddress string `json:"primaryAddress,omitempty"`

	// configHash is the sha256 of the rendered config and keys that the pods
	// run (the pod template's bind.unkin.net/config-hash).
	// +optional
	ConfigHash string `json:"configHash,omitempty"`

	// selector is the label selector of the pods, for tooling.
	// +optional
	Selector string `json:"selector,omitempty"`

	// image is the BIND image of the StatefulSet's pod template: spec.image,
	// or the operator's default when that is empty. Pods still rolling may
	// run the previous one (condition Progressing).
	// +optional
	Image string `json:"image,omitempty"`

	// agentImage is the agent image of the StatefulSet's pod template:
	// spec.agentImage, or the operator's default when that is empty.
	// +optional
	AgentImage string `json:"agentImage,omitempty"`
}

// BindCluster runs BIND 9 as a StatefulSet: ordinal 0 is the primary, the
// others are secondaries kept in sync through keyed NOTIFY and transfers.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bcl,categories=bind
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.primaryAddress`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.image`,priority=1
type BindCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired cluster.
	// +required
	Spec BindClusterSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status BindClusterStatus `json:"status,omitempty"`
}

// BindClusterList is a list of BindClusters.
// +kubebuilder:object:root=true
type BindClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BindCluster{}, &BindClusterList{})
}
