package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindCatalogZoneSpec is a catalog zone (RFC 9432) on a cluster's primary.
// Every secondary consumes it, so member zones appear on the secondaries
// without a config change or a restart.
type BindCatalogZoneSpec struct {
	// clusterRef names the BindCluster whose primary serves the catalog.
	// Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable; create a new BindCatalogZone for the other cluster."
	ClusterRef LocalObjectReference `json:"clusterRef"`

	// zoneName is the catalog zone's name, e.g. "catalog.example.internal".
	// It should not be delegated in public DNS. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="zoneName is immutable; create a new BindCatalogZone for the other name."
	// +kubebuilder:validation:XValidation:rule="self != '.'",message="the root zone cannot be a catalog zone; use a name such as catalog.example.internal."
	ZoneName DomainName `json:"zoneName"`

	// transferKeyRef names the BindTSIGKey that signs the transfers of the
	// catalog and of its member zones, and the primary's NOTIFYs.
	// +required
	TransferKeyRef LocalObjectReference `json:"transferKeyRef"`

	// defaultPrimaries are the servers secondaries transfer member zones
	// from. Defaults to the cluster's primary Service, keyed with
	// transferKeyRef. Set it only to pull members from elsewhere.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	DefaultPrimaries []RemoteServer `json:"defaultPrimaries,omitempty"`
}

// MaxCatalogMembersListed is how many member names
// BindCatalogZoneStatus.Members holds at most.
const MaxCatalogMembersListed = 100

// BindCatalogZoneStatus is the observed state of a BindCatalogZone.
type BindCatalogZoneStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// members are the first 100 zone names in the catalog, sorted;
	// memberCount counts them all. The list is bounded because it is
	// rewritten on every change: a catalog of thousands of zones would
	// send all of their names to the API server each time.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Members []string `json:"members,omitempty"`

	// memberCount is the number of member zones in the catalog.
	// +optional
	MemberCount int32 `json:"memberCount,omitempty"`

	// serial of the catalog zone on the primary.
	// +optional
	Serial *int64 `json:"serial,omitempty"`
}

// BindCatalogZone lets secondaries provision member zones automatically.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bcat,categories=bind
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zoneName`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Members",type=integer,JSONPath=`.status.memberCount`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BindCatalogZone struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired catalog.
	// +required
	Spec BindCatalogZoneSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status BindCatalogZoneStatus `json:"status,omitempty"`
}

// BindCatalogZoneList is a list of BindCatalogZones.
// +kubebuilder:object:root=true
type BindCatalogZoneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindCatalogZone `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BindCatalogZone{}, &BindCatalogZoneList{})
}
