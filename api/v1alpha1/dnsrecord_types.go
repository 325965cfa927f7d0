package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DNSRecordFinalizer holds a DNSRecord until its data is removed from the
// zone. The mutating webhook sets it on create; the controller sets it on
// objects that were admitted without the webhook.
const DNSRecordFinalizer = "bind.unkin.net/dnsrecord"

// DNSRecordSpec is one record set applied to a zone's primary with a
// TSIG-signed RFC 2136 UPDATE.
// +kubebuilder:validation:XValidation:rule="self.type != 'CNAME' || size(self.values) == 1",message="a CNAME record set holds exactly one value; a name can alias only one target."
// +kubebuilder:validation:XValidation:rule="self.type != 'CNAME' || self.name != '@'",message="a CNAME cannot be placed at the zone apex (@); use A/AAAA records there instead."
// +kubebuilder:validation:XValidation:rule="!(self.type in ['NS', 'DS']) || self.name != '@'",message="apex NS and DS records belong to the BindZone (or its parent), not to a DNSRecord."
type DNSRecordSpec struct {
	// zoneRef names the BindZone (a Primary zone) the record belongs to,
	// in the record's namespace unless zoneRef.namespace says otherwise.
	// Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="zoneRef is immutable; create a new DNSRecord in the other zone."
	ZoneRef ZoneReference `json:"zoneRef"`

	// name is the owner name relative to the zone ("@" for the apex).
	// Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="name is immutable; create a new DNSRecord for the other name."
	Name RecordName `json:"name"`

	// type is the record type. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable; create a new DNSRecord for the other type."
	Type RecordType `json:"type"`

	// ttl in seconds. Defaults to the zone's defaultTTL.
	// +optional
	TTL *TTL `json:"ttl,omitempty"`

	// values are the record data in presentation format, one per record.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=4096
	// +listType=atomic
	Values []string `json:"values"`

	// adoptExisting lets the record take over data that already exists at
	// its name and type but was not created by a DNSRecord. Without it such
	// data is left alone and the record reports a Conflict.
	// +optional
	AdoptExisting bool `json:"adoptExisting,omitempty"` //nolint:kubeapilinter // unset is false, the default: nothing fills it, so an explicit false is never replaced
}

// ZoneReference names a BindZone, possibly in another namespace.
// +structType=atomic
type ZoneReference struct {
	// name of the BindZone.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`

	// namespace of the BindZone. Defaults to the DNSRecord's. A zone in
	// another namespace must allow DNSRecords from this one (its
	// spec.allowedRecords).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace,omitempty"`
}

// ZoneKey is where the record's BindZone is: zoneRef, in the record's
// namespace unless zoneRef.namespace is set.
func (r *DNSRecord) ZoneKey() types.NamespacedName {
	ns := r.Spec.ZoneRef.Namespace
	if ns == "" {
		ns = r.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: r.Spec.ZoneRef.Name}
}

// DNSRecordStatus is the observed state of a DNSRecord.
type DNSRecordStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready and Conflict.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// fqdn is the absolute owner name of the record.
	// +optional
	FQDN string `json:"fqdn,omitempty"`

	// lastRcode is the DNS response code of the last UPDATE, e.g. NOERROR
	// or YXRRSET.
	// +optional
	LastRcode string `json:"lastRcode,omitempty"`

	// appliedValues are the values this record last wrote to the zone, in
	// canonical form. They are the ownership record: an UPDATE replaces or
	// deletes the record set only while it still holds exactly these values
	// (an RFC 2136 prerequisite), so data written by anyone else is never
	// overwritten or deleted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	AppliedValues []string `json:"appliedValues,omitempty"`

	// appliedTTL is the TTL this record last wrote.
	// +optional
	AppliedTTL *int32 `json:"appliedTTL,omitempty"`
}

// DNSRecord is one DNS record set managed through RFC 2136 UPDATE, the way
// external-dns would send it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=brec,categories=bind
// +kubebuilder:printcolumn:name="FQDN",type=string,JSONPath=`.status.fqdn`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zoneRef.name`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DNSRecord struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired record set.
	// +required
	Spec DNSRecordSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status DNSRecordStatus `json:"status,omitempty"`
}

// DNSRecordList is a list of DNSRecords.
// +kubebuilder:object:root=true
type DNSRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSRecord `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DNSRecord{}, &DNSRecordList{})
}
