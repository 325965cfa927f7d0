package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RPZTrigger says what a policy rule matches.
// +kubebuilder:validation:Enum=QName;ClientIP;ResponseIP;NSDName;NSIP
type RPZTrigger string

const (
	// TriggerQName matches the query name (wildcards allowed: "*.example.com").
	TriggerQName RPZTrigger = "QName"
	// TriggerClientIP matches the client's address or prefix.
	TriggerClientIP RPZTrigger = "ClientIP"
	// TriggerResponseIP matches an address in the answer.
	TriggerResponseIP RPZTrigger = "ResponseIP"
	// TriggerNSDName matches the name of an authoritative server.
	TriggerNSDName RPZTrigger = "NSDName"
	// TriggerNSIP matches the address of an authoritative server.
	TriggerNSIP RPZTrigger = "NSIP"
)

// RPZAction is what happens to a matching response.
// +kubebuilder:validation:Enum=NXDOMAIN;NODATA;PASSTHRU;DROP;TCPOnly;Redirect
type RPZAction string

const (
	// ActionNXDOMAIN answers that the name does not exist.
	ActionNXDOMAIN RPZAction = "NXDOMAIN"
	// ActionNODATA answers that the name has no data of the type.
	ActionNODATA RPZAction = "NODATA"
	// ActionPassthru answers normally (an exception to other rules).
	ActionPassthru RPZAction = "PASSTHRU"
	// ActionDrop does not answer.
	ActionDrop RPZAction = "DROP"
	// ActionTCPOnly makes UDP clients retry over TCP.
	ActionTCPOnly RPZAction = "TCPOnly"
	// ActionRedirect answers with a CNAME to redirectTo.
	ActionRedirect RPZAction = "Redirect"
)

// RPZPolicyOverride replaces the actions of every rule of a policy.
// +kubebuilder:validation:Enum=Given;Disabled;Passthru;NXDOMAIN;NODATA;DROP;TCPOnly
type RPZPolicyOverride string

const (
	// RPZOverrideGiven keeps each rule's own action.
	RPZOverrideGiven RPZPolicyOverride = "Given"
	// RPZOverrideDisabled logs matches without acting on them.
	RPZOverrideDisabled RPZPolicyOverride = "Disabled"
	// RPZOverridePassthru answers every match normally.
	RPZOverridePassthru RPZPolicyOverride = "Passthru"
	// RPZOverrideNXDOMAIN answers every match with NXDOMAIN.
	RPZOverrideNXDOMAIN RPZPolicyOverride = "NXDOMAIN"
	// RPZOverrideNODATA answers every match with NODATA.
	RPZOverrideNODATA RPZPolicyOverride = "NODATA"
	// RPZOverrideDrop drops every match.
	RPZOverrideDrop RPZPolicyOverride = "DROP"
	// RPZOverrideTCPOnly sends every matching UDP client to TCP.
	RPZOverrideTCPOnly RPZPolicyOverride = "TCPOnly"
)

// RPZRule is one rule of a response policy.
// +kubebuilder:validation:XValidation:rule="self.action == 'Redirect' ? has(self.redirectTo) : !has(self.redirectTo)",message="redirectTo is required for the Redirect action and only allowed with it."
// +kubebuilder:validation:XValidation:rule="!(self.trigger in ['ClientIP', 'ResponseIP', 'NSIP']) || isIP(self.match) || isCIDR(self.match)",message="ClientIP, ResponseIP and NSIP rules match an IP address or CIDR prefix such as 192.0.2.0/24."
// +kubebuilder:validation:XValidation:rule="!(self.trigger in ['QName', 'NSDName']) || self.match.matches('^(\\\\*\\\\.)?([A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?)(\\\\.[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?)*\\\\.?$')",message="QName and NSDName rules match a domain name, optionally with a leading wildcard label such as *.example.com."
type RPZRule struct {
	// match is what the trigger compares: a domain name for QName and
	// NSDName, an IP address or CIDR prefix for ClientIP, ResponseIP and NSIP.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=254
	Match string `json:"match"`

	// trigger is QName, ClientIP, ResponseIP, NSDName or NSIP. Defaults to QName.
	// +optional
	// +kubebuilder:default=QName
	Trigger RPZTrigger `json:"trigger,omitempty"`

	// action is NXDOMAIN, NODATA, PASSTHRU, DROP, TCPOnly or Redirect.
	// +required
	Action RPZAction `json:"action"`

	// redirectTo is the domain name a Redirect answers with (a CNAME).
	// +optional
	RedirectTo DomainName `json:"redirectTo,omitempty"`
}

// BindPolicySpec is a response policy zone (RPZ), a DNS firewall.
// +kubebuilder:validation:XValidation:rule="!has(self.primaries) || !has(self.rules)",message="a policy either holds its own rules or transfers them from a feed's primaries; remove rules or primaries."
type BindPolicySpec struct {
	// clusterRef names the BindCluster that enforces the policy. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable; create a new BindPolicy for the other cluster."
	ClusterRef LocalObjectReference `json:"clusterRef"`

	// viewRef applies the policy only in one BindView.
	// +optional
	ViewRef *LocalObjectReference `json:"viewRef,omitempty"`

	// zoneName is the policy zone's name, e.g. "rpz.example.internal".
	// Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="zoneName is immutable; create a new BindPolicy for the other name."
	// +kubebuilder:validation:XValidation:rule="self != '.'",message="a policy zone needs its own name such as rpz.example.internal, not the root."
	ZoneName DomainName `json:"zoneName"`

	// order places the policy among the cluster's policies: lower is
	// consulted first. Ties sort by name. Defaults to 100; 0 is the first
	// place.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Order *int32 `json:"order,omitempty"`

	// rules of the policy; at most one per match and trigger. The bound
	// keeps the CEL cost of the per-rule checks within the API server's budget.
	// +optional
	// +kubebuilder:validation:MaxItems=2000
	// +listType=map
	// +listMapKey=match
	// +listMapKey=trigger
	Rules []RPZRule `json:"rules,omitempty"`

	// primaries make the policy a feed: every pod transfers the policy zone
	// from these servers (an RPZ provider, or a policy zone another server
	// maintains), keyed when keyRef names a BindTSIGKey, instead of holding
	// rules written here.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Primaries []RemoteServer `json:"primaries,omitempty"`

	// policyOverride replaces every rule's action, e.g. Disabled to log
	// matches without acting on them. Defaults to Given (use each rule's).
	// +optional
	PolicyOverride RPZPolicyOverride `json:"policyOverride,omitempty"`

	// maxPolicyTTL caps the TTL of rewritten answers, in seconds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	MaxPolicyTTL *int32 `json:"maxPolicyTTL,omitempty"`

	// log writes a line for every rewritten response. Defaults to true.
	// +optional
	Log *bool `json:"log,omitempty"`

	// breakDNSSEC applies the policy even to DNSSEC-signed answers.
	// +optional
	BreakDNSSEC bool `json:"breakDNSSEC,omitempty"` //nolint:kubeapilinter // unset is false, the default: nothing fills it, so an explicit false is never replaced

	// qnameWaitRecurse waits for recursion before applying QName rules.
	// Defaults to BIND's default (yes).
	// +optional
	QNameWaitRecurse *bool `json:"qnameWaitRecurse,omitempty"`
}

// BindPolicyStatus is the observed state of a BindPolicy.
type BindPolicyStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ruleCount is the number of rules the cluster enforces.
	// +optional
	RuleCount int32 `json:"ruleCount,omitempty"`
}

// BindPolicy is a DNS firewall: a response policy zone on a BindCluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=brpz,categories=bind
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zoneName`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Rules",type=integer,JSONPath=`.status.ruleCount`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BindPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired policy.
	// +required
	Spec BindPolicySpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status BindPolicyStatus `json:"status,omitempty"`
}

// BindPolicyList is a list of BindPolicies.
// +kubebuilder:object:root=true
type BindPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BindPolicy{}, &BindPolicyList{})
}
