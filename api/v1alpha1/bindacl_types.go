package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindACLSpec is a named address_match_list. It is rendered into every
// BindCluster whose zones, views or options refer to it.
type BindACLSpec struct {
	// entries are the list's elements, in order: BIND stops at the first
	// element that matches, so put negations first.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1024
	// +listType=atomic
	Entries []AddressMatchElement `json:"entries"`
}

// BindACLStatus is the observed state of a BindACL.
type BindACLStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// users is the number of objects in the namespace that name this ACL
	// (BindClusters, BindViews, BindZones and other BindACLs).
	// +optional
	Users int32 `json:"users,omitempty"`
}

// BindACL is a reusable named address match list.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bacl,categories=bind
// +kubebuilder:validation:XValidation:rule="!(self.metadata.name in ['any', 'none', 'localhost', 'localnets'])",message="any, none, localhost and localnets are BIND's built-in ACLs; choose another name."
// +kubebuilder:printcolumn:name="Users",type=integer,JSONPath=`.status.users`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BindACL struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired list.
	// +required
	Spec BindACLSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status BindACLStatus `json:"status,omitempty"`
}

// BindACLList is a list of BindACLs.
// +kubebuilder:object:root=true
type BindACLList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindACL `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BindACL{}, &BindACLList{})
}
