package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DNSSECKeyRole is the role of a key in a dnssec-policy.
// +kubebuilder:validation:Enum=KSK;ZSK;CSK
type DNSSECKeyRole string

const (
	// RoleKSK signs the DNSKEY set.
	RoleKSK DNSSECKeyRole = "KSK"
	// RoleZSK signs the zone's data.
	RoleZSK DNSSECKeyRole = "ZSK"
	// RoleCSK does both.
	RoleCSK DNSSECKeyRole = "CSK"
)

// DNSSECAlgorithm is a DNSSEC signing algorithm BIND 9.18 supports.
// +kubebuilder:validation:Enum=rsasha256;rsasha512;ecdsap256sha256;ecdsap384sha384;ed25519;ed448
type DNSSECAlgorithm string

const (
	DNSSECRSASHA256       DNSSECAlgorithm = "rsasha256"
	DNSSECRSASHA512       DNSSECAlgorithm = "rsasha512"
	DNSSECECDSAP256SHA256 DNSSECAlgorithm = "ecdsap256sha256"
	DNSSECECDSAP384SHA384 DNSSECAlgorithm = "ecdsap384sha384"
	DNSSECED25519         DNSSECAlgorithm = "ed25519"
	DNSSECED448           DNSSECAlgorithm = "ed448"
)

// IsRSA reports whether keys of the algorithm have a configurable size.
func (a DNSSECAlgorithm) IsRSA() bool {
	return a == DNSSECRSASHA256 || a == DNSSECRSASHA512
}

// BINDDuration is a BIND duration: ISO 8601 (P90D, PT1H, P1Y2M) or
// BIND's TTL style (90d, 1h, 3600).
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^(P(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(\d+H)?(\d+M)?(\d+S)?)?|(\d+[wdhmsWDHMS]?)+)$`
// +kubebuilder:validation:XValidation:rule="self != 'P' && !self.endsWith('T')",message="a duration needs at least one number, e.g. P90D or PT1H."
type BINDDuration string

// DNSSECKey is one key of a dnssec-policy.
// +kubebuilder:validation:XValidation:rule="!has(self.keySize) || self.algorithm.startsWith('rsa')",message="keySize only applies to RSA algorithms; elliptic-curve keys have a fixed size."
type DNSSECKey struct {
	// role is KSK (signs the DNSKEY set), ZSK (signs the zone) or CSK (both).
	// +required
	Role DNSSECKeyRole `json:"role"`

	// algorithm is the signing algorithm. ecdsap256sha256 is a good default.
	// +required
	Algorithm DNSSECAlgorithm `json:"algorithm"`

	// keySize in bits, for RSA algorithms only.
	// +optional
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=4096
	KeySize *int32 `json:"keySize,omitempty"`

	// lifetime before the key is rolled, e.g. P90D, or "unlimited".
	// Defaults to unlimited.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self == 'unlimited' || self.matches('^(P(\\\\d+Y)?(\\\\d+M)?(\\\\d+W)?(\\\\d+D)?(T(\\\\d+H)?(\\\\d+M)?(\\\\d+S)?)?|(\\\\d+[wdhmsWDHMS]?)+)$')",message="lifetime must be \"unlimited\" or a duration such as P90D."
	Lifetime string `json:"lifetime,omitempty"`
}

// NSEC3Spec turns on NSEC3 instead of NSEC.
type NSEC3Spec struct {
	// iterations of the NSEC3 hash. RFC 9276 recommends 0; BIND 9.18
	// refuses to load zones with more than 150.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=150
	Iterations *int32 `json:"iterations,omitempty"`

	// optOut skips unsigned delegations. Only useful for very large
	// delegation-heavy zones.
	// +optional
	OptOut bool `json:"optOut,omitempty"` //nolint:kubeapilinter // unset is false, the default: nothing fills it, so an explicit false is never replaced

	// saltLength in bytes. RFC 9276 recommends 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=255
	SaltLength *int32 `json:"saltLength,omitempty"`
}

// BindDNSSECPolicySpec is a named dnssec-policy: which keys sign a zone,
// how long they live and how signatures are kept fresh. Zones use it with
// spec.dnssecPolicyRef; it is rendered into every cluster that has such a
// zone.
// +kubebuilder:validation:XValidation:rule="self.keys.exists(k, k.role == 'CSK') ? self.keys.all(k, k.role == 'CSK') : (self.keys.exists(k, k.role == 'KSK') && self.keys.exists(k, k.role == 'ZSK'))",message="use either CSK keys only, or at least one KSK and one ZSK."
type BindDNSSECPolicySpec struct {
	// keys of the policy.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	Keys []DNSSECKey `json:"keys"`

	// dnskeyTTL is the TTL of the DNSKEY records.
	// +optional
	DNSKEYTTL BINDDuration `json:"dnskeyTTL,omitempty"`

	// maxZoneTTL is the largest TTL in the zone, used to time rollovers.
	// +optional
	MaxZoneTTL BINDDuration `json:"maxZoneTTL,omitempty"`

	// publishSafety is extra time before a new key is used.
	// +optional
	PublishSafety BINDDuration `json:"publishSafety,omitempty"`

	// retireSafety is extra time before a retired key is removed.
	// +optional
	RetireSafety BINDDuration `json:"retireSafety,omitempty"`

	// purgeKeys is how long a deleted key's files are kept.
	// +optional
	PurgeKeys BINDDuration `json:"purgeKeys,omitempty"`

	// signaturesRefresh is how long before expiry signatures are renewed.
	// +optional
	SignaturesRefresh BINDDuration `json:"signaturesRefresh,omitempty"`

	// signaturesValidity is the validity of RRSIGs.
	// +optional
	SignaturesValidity BINDDuration `json:"signaturesValidity,omitempty"`

	// signaturesValidityDNSKEY is the validity of the DNSKEY RRSIGs.
	// +optional
	SignaturesValidityDNSKEY BINDDuration `json:"signaturesValidityDNSKEY,omitempty"`

	// signaturesJitter spreads signature expiry over this window so that
	// re-signing does not happen all at once. BIND needs it no longer than
	// signaturesValidity and signaturesValidityDNSKEY; its default is 12
	// hours, so short validities (and short key lifetimes) need it set.
	// +optional
	SignaturesJitter BINDDuration `json:"signaturesJitter,omitempty"`

	// zonePropagationDelay is how long a change takes to reach every secondary.
	// +optional
	ZonePropagationDelay BINDDuration `json:"zonePropagationDelay,omitempty"`

	// parentDSTTL is the TTL of the DS record in the parent zone.
	// +optional
	ParentDSTTL BINDDuration `json:"parentDSTTL,omitempty"`

	// parentPropagationDelay is how long a DS change takes in the parent.
	// +optional
	ParentPropagationDelay BINDDuration `json:"parentPropagationDelay,omitempty"`

	// nsec3 uses NSEC3 for authenticated denial; without it NSEC is used.
	// +optional
	NSEC3 *NSEC3Spec `json:"nsec3,omitempty"`
}

// BindDNSSECPolicyStatus is the observed state of a BindDNSSECPolicy.
type BindDNSSECPolicyStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// zoneCount is the number of BindZones signed with the policy.
	// +optional
	ZoneCount int32 `json:"zoneCount,omitempty"`
}

// BindDNSSECPolicy is a named BIND dnssec-policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bdnssec,categories=bind
// +kubebuilder:validation:XValidation:rule="!(self.metadata.name in ['default', 'insecure', 'none'])",message="default, insecure and none are BIND's built-in policies; choose another name."
// +kubebuilder:printcolumn:name="Zones",type=integer,JSONPath=`.status.zoneCount`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BindDNSSECPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired policy.
	// +required
	Spec BindDNSSECPolicySpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status BindDNSSECPolicyStatus `json:"status,omitempty"`
}

// BindDNSSECPolicyList is a list of BindDNSSECPolicies.
// +kubebuilder:object:root=true
type BindDNSSECPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindDNSSECPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BindDNSSECPolicy{}, &BindDNSSECPolicyList{})
}
