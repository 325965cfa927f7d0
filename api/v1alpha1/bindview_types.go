package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindViewSpec is a split-horizon view: clients that match see the view's
// zones. BIND picks the first matching view, so order matters.
// +kubebuilder:validation:XValidation:rule="has(self.matchClients) || has(self.matchDestinations)",message="a view needs matchClients or matchDestinations; use builtin: any to match every client."
// +kubebuilder:validation:XValidation:rule="!has(self.recursion) || !self.recursion || !has(self.allowRecursion) || size(self.allowRecursion) > 0",message="allowRecursion must not be empty when recursion is on; list the clients that may recurse."
// +kubebuilder:validation:XValidation:rule="!has(self.allowRecursion) || (has(self.recursion) && self.recursion)",message="allowRecursion needs recursion: true."
// +kubebuilder:validation:XValidation:rule="!has(self.recursion) || self.recursion || !has(self.forwarders) || size(self.forwarders) == 0",message="forwarders are only used while recursing; set recursion: true or remove them.",fieldPath=".forwarders"
// +kubebuilder:validation:XValidation:rule="!has(self.recursion) || self.recursion || !has(self.matchRecursiveOnly) || !self.matchRecursiveOnly",message="a view that matches only recursive queries needs recursion: true, or it answers none of them.",fieldPath=".matchRecursiveOnly"
type BindViewSpec struct {
	// clusterRef names the BindCluster that serves the view. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable; create a new BindView for the other cluster."
	ClusterRef LocalObjectReference `json:"clusterRef"`

	// order places the view among the cluster's views; lower comes first
	// and BIND uses the first view that matches. Ties sort by name.
	// Defaults to 100; 0 is the first place.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Order *int32 `json:"order,omitempty"`

	// matchClients selects clients by source address, ACL or TSIG key.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	MatchClients []AddressMatchElement `json:"matchClients,omitempty"`

	// matchDestinations selects clients by the address they queried.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	MatchDestinations []AddressMatchElement `json:"matchDestinations,omitempty"`

	// matchRecursiveOnly matches only recursive queries.
	// +optional
	MatchRecursiveOnly bool `json:"matchRecursiveOnly,omitempty"` //nolint:kubeapilinter // unset is false, the default: nothing fills it, so an explicit false is never replaced

	// recursion turns recursion on for the view. Defaults to the cluster's
	// mode.
	// +optional
	Recursion *bool `json:"recursion,omitempty"`

	// allowRecursion lists who may recurse in this view.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	AllowRecursion []AddressMatchElement `json:"allowRecursion,omitempty"`

	// forwarders of the view, for recursive views.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Forwarders []Forwarder `json:"forwarders,omitempty"`
}

// BindViewStatus is the observed state of a BindView.
type BindViewStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// zoneCount is the number of BindZones in the view.
	// +optional
	ZoneCount int32 `json:"zoneCount,omitempty"`
}

// BindView is a split-horizon view of a BindCluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bview,categories=bind
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Order",type=integer,JSONPath=`.spec.order`
// +kubebuilder:printcolumn:name="Zones",type=integer,JSONPath=`.status.zoneCount`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BindView struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired view.
	// +required
	Spec BindViewSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status BindViewStatus `json:"status,omitempty"`
}

// BindViewList is a list of BindViews.
// +kubebuilder:object:root=true
type BindViewList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindView `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BindView{}, &BindViewList{})
}
