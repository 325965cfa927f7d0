package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TSIGAlgorithm is an HMAC algorithm BIND 9.18 supports for TSIG.
// hmac-md5 is left out on purpose.
// +kubebuilder:validation:Enum=hmac-sha1;hmac-sha224;hmac-sha256;hmac-sha384;hmac-sha512
type TSIGAlgorithm string

const (
	TSIGHMACSHA1   TSIGAlgorithm = "hmac-sha1"
	TSIGHMACSHA224 TSIGAlgorithm = "hmac-sha224"
	TSIGHMACSHA256 TSIGAlgorithm = "hmac-sha256"
	TSIGHMACSHA384 TSIGAlgorithm = "hmac-sha384"
	TSIGHMACSHA512 TSIGAlgorithm = "hmac-sha512"
)

// TSIGAlgorithms are the algorithms of the enum above, in its order: the
// allow-list of the controller that generates material and of render.
var TSIGAlgorithms = []TSIGAlgorithm{TSIGHMACSHA1, TSIGHMACSHA224, TSIGHMACSHA256, TSIGHMACSHA384, TSIGHMACSHA512}

// KeyBytes is the length of the material the operator generates for the
// algorithm: the HMAC's output size, as RFC 2104 recommends and as
// tsig-keygen generates. 0 for an algorithm outside TSIGAlgorithms.
func (a TSIGAlgorithm) KeyBytes() int {
	switch a {
	case TSIGHMACSHA1:
		return 20
	case TSIGHMACSHA224:
		return 28
	case TSIGHMACSHA256:
		return 32
	case TSIGHMACSHA384:
		return 48
	case TSIGHMACSHA512:
		return 64
	}
	return 0
}

// ControlKeyName is the name of the key the operator generates for named's
// control channel (rndc), which the agent signs its commands with.
const ControlKeyName = "bind-operator-control"

// ViewKeyPrefix starts the names of the keys the operator generates for
// views: each BindView V of a cluster gets the key ViewKeyPrefix+V, which
// the view's match-clients admits first. The operator signs its UPDATEs,
// transfers, NOTIFYs and serial checks of the view's zones with it, so
// BIND picks the zone's view by key, never by the sender's address.
const ViewKeyPrefix = "bind-operator-view-"

// ViewKeyName is the BIND name of BindView view's key.
func ViewKeyName(view string) string { return ViewKeyPrefix + view }

// ReservedTSIGKeyNames are key names a BindTSIGKey may not take, with why:
// a second key of that name would clash in named.conf.
var ReservedTSIGKeyNames = map[string]string{
	"rndc-key":     "it is BIND's own control-channel key",
	ControlKeyName: "it is the operator's control-channel key",
}

// ReservedTSIGKeyPrefixes start key names a BindTSIGKey may not take, with
// why: the operator generates keys with these names.
var ReservedTSIGKeyPrefixes = map[string]string{
	ViewKeyPrefix: "the operator names the keys of BindViews so",
}

// Keys of the data in a TSIG key Secret.
const (
	// TSIGSecretKey holds the base64 key material, as BIND's "secret".
	TSIGSecretKey = "secret"
	// TSIGSecretAlgorithm holds the algorithm name, for clients.
	TSIGSecretAlgorithm = "algorithm"
	// TSIGSecretKeyName holds the key name, for clients.
	TSIGSecretKeyName = "keyName"
)

// SecretTemplate is metadata stamped on a generated Secret, e.g. the
// annotations of a reflector that copies it to another namespace.
type SecretTemplate struct {
	// labels added to the Secret. The operator's own labels always win and
	// may not be set here.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="!('app.kubernetes.io/managed-by' in self)",message="the label app.kubernetes.io/managed-by is reserved for the operator; remove it from secretTemplate.labels."
	Labels map[string]string `json:"labels,omitempty"`

	// annotations added to the Secret.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`
}

// BindTSIGKeySpec is a TSIG key. Its material lives only in a Secret: the
// operator generates it there once, or adopts an existing Secret.
// +kubebuilder:validation:XValidation:rule="!has(self.importExisting) || !self.importExisting || (has(self.secretName) && size(self.secretName) > 0)",message="importExisting needs secretName: the name of the existing Secret to adopt."
// +kubebuilder:validation:XValidation:rule="!has(self.importExisting) || !self.importExisting || !has(self.secretTemplate)",message="secretTemplate cannot be used with importExisting: an imported Secret is never modified."
// +kubebuilder:validation:XValidation:rule="(has(self.importExisting) && self.importExisting) == (has(oldSelf.importExisting) && oldSelf.importExisting)",message="importExisting is immutable: switching it would start or stop managing a Secret the operator did not create; create a new BindTSIGKey instead.",fieldPath=".importExisting"
type BindTSIGKeySpec struct {
	// keyName is the key's name in BIND and on the wire. Defaults to the
	// object's name. Immutable, since clients sign with it.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="keyName is immutable: clients sign with it. Create a new BindTSIGKey instead."
	// +kubebuilder:validation:XValidation:rule="self != '.'",message="a key needs a name such as transfer-key or update.example.com, not the root."
	KeyName DomainName `json:"keyName,omitempty"`

	// algorithm is the HMAC algorithm. Defaults to hmac-sha256.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="algorithm is immutable: the material was generated for it. Create a new BindTSIGKey instead."
	Algorithm TSIGAlgorithm `json:"algorithm,omitempty"`

	// secretName is the Secret that holds the material. Defaults to
	// "<name>-tsig". Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="secretName is immutable; create a new BindTSIGKey to use another Secret."
	SecretName string `json:"secretName,omitempty"`

	// importExisting adopts the existing Secret secretName (which must hold
	// the key under "secret") instead of generating one. The operator never
	// modifies an imported Secret. Immutable.
	// +optional
	ImportExisting bool `json:"importExisting,omitempty"` //nolint:kubeapilinter // unset is false, the default: nothing fills it, so an explicit false is never replaced

	// secretTemplate is metadata reconciled onto the generated Secret.
	// +optional
	SecretTemplate *SecretTemplate `json:"secretTemplate,omitempty"`
}

// BindTSIGKeyStatus is the observed state of a BindTSIGKey.
type BindTSIGKeyStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the Secret exists and holds usable material).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// secretName is the Secret that holds the material.
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// keyName is the key's name in BIND.
	// +optional
	KeyName string `json:"keyName,omitempty"`
}

// BindTSIGKey is a TSIG key for signed updates, transfers and NOTIFYs.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=btsig,categories=bind
// +kubebuilder:printcolumn:name="Key",type=string,JSONPath=`.status.keyName`
// +kubebuilder:printcolumn:name="Algorithm",type=string,JSONPath=`.spec.algorithm`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.status.secretName`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BindTSIGKey struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired key.
	// +optional
	Spec BindTSIGKeySpec `json:"spec,omitempty"`

	// status is the observed state.
	// +optional
	Status BindTSIGKeyStatus `json:"status,omitempty"`
}

// BindTSIGKeyList is a list of BindTSIGKeys.
// +kubebuilder:object:root=true
type BindTSIGKeyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindTSIGKey `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BindTSIGKey{}, &BindTSIGKeyList{})
}
