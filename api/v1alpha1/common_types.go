package v1alpha1

// Labels and annotations owned by the operator.
const (
	// LabelManagedBy marks objects that the operator created and manages.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy on operator objects.
	ManagedByValue = "bind-operator"
	// LabelCluster is set on every object a BindCluster owns (pods
	// included) to the cluster's name.
	LabelCluster = "bind.unkin.net/cluster"
	// LabelRole is set on pods to "primary" or "secondary".
	LabelRole = "bind.unkin.net/role"
	// AnnotationConfigHash is stamped on the pod template of a BindCluster's
	// StatefulSet; it changes exactly when the rendered config or keys change.
	AnnotationConfigHash = "bind.unkin.net/config-hash"
)

// LocalObjectReference names another object of this API in the same namespace.
// +structType=atomic
type LocalObjectReference struct {
	// name of the referenced object, in the same namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`
}

// TTL is a DNS time-to-live in seconds (RFC 2181 §8: 0 to 2^31-1).
// +kubebuilder:validation:Minimum=0
// +kubebuilder:validation:Maximum=2147483647
type TTL int32

// DomainName is a DNS name, written without or with the trailing dot.
// Labels may hold letters, digits, hyphens and underscores; names are
// lowercased by the mutating webhook.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=254
// +kubebuilder:validation:Pattern=`^(\.|([A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?)(\.[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?)*\.?)$`
// +kubebuilder:validation:XValidation:rule="size(self) <= (self.endsWith('.') ? 254 : 253)",message="a domain name has at most 253 characters (254 with the trailing dot), e.g. example.com; shorten it."
type DomainName string

// The limits of a DNS name (RFC 1035 §2.3.4): a label holds at most 63
// octets, a name 255 on the wire, which is 253 in text without the final
// dot. Every Go check of a DNS name uses these; DomainName's markers say
// the same numbers because a marker cannot name a constant.
const (
	MaxDomainNameLength = 253
	MaxLabelLength      = 63
)

// BuiltinACL is one of BIND's predefined address match lists.
// +kubebuilder:validation:Enum=any;none;localhost;localnets
type BuiltinACL string

const (
	// BuiltinAny matches every client.
	BuiltinAny BuiltinACL = "any"
	// BuiltinNone matches no client.
	BuiltinNone BuiltinACL = "none"
	// BuiltinLocalhost matches the server's own addresses.
	BuiltinLocalhost BuiltinACL = "localhost"
	// BuiltinLocalnets matches the networks the server is attached to.
	BuiltinLocalnets BuiltinACL = "localnets"
)

// BuiltinACLs are the lists of the enum above, in its order.
var BuiltinACLs = []BuiltinACL{BuiltinAny, BuiltinNone, BuiltinLocalhost, BuiltinLocalnets}

// AddressMatchElement is one element of a BIND address_match_list. Exactly
// one of address, aclRef, keyRef and builtin is set; negate turns the element
// into "! element". Elements are structured rather than free text so that no
// user input can escape its block in named.conf.
// +kubebuilder:validation:XValidation:rule="[has(self.address), has(self.aclRef), has(self.keyRef), has(self.builtin)].filter(x, x).size() == 1",message="set exactly one of address, aclRef, keyRef or builtin in each address match element."
type AddressMatchElement struct {
	// address is an IPv4 or IPv6 address or CIDR prefix, e.g. 10.0.0.0/8.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isIP(self) || isCIDR(self)",message="address must be an IP address or a CIDR prefix such as 10.0.0.0/8 or 2001:db8::/32."
	Address string `json:"address,omitempty"`

	// aclRef names a BindACL in the same namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ACLRef string `json:"aclRef,omitempty"`

	// keyRef names a BindTSIGKey in the same namespace; clients signing with
	// that key match.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	KeyRef string `json:"keyRef,omitempty"`

	// builtin is one of BIND's predefined lists: any, none, localhost or localnets.
	// +optional
	Builtin BuiltinACL `json:"builtin,omitempty"`

	// negate excludes the matched clients instead of including them.
	// +optional
	Negate bool `json:"negate,omitempty"` //nolint:kubeapilinter // unset is false, the default: nothing fills it, so an explicit false is never replaced
}

// RemoteServer is a server outside the cluster, e.g. an external primary.
type RemoteServer struct {
	// address is the server's IPv4 or IPv6 address.
	// +required
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="address must be an IPv4 or IPv6 address, not a host name."
	Address string `json:"address"`

	// port is the server's DNS port. Defaults to 53.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// keyRef names a BindTSIGKey in the same namespace that signs transfers
	// and NOTIFYs exchanged with this server.
	// +optional
	KeyRef *LocalObjectReference `json:"keyRef,omitempty"`
}

// ForwardPolicy tells BIND whether to fall back to iterative resolution
// when the forwarders do not answer.
// +kubebuilder:validation:Enum=First;Only
type ForwardPolicy string

const (
	// ForwardFirst queries the forwarders first, then resolves iteratively.
	ForwardFirst ForwardPolicy = "First"
	// ForwardOnly queries only the forwarders.
	ForwardOnly ForwardPolicy = "Only"
)

// Forwarder is a DNS server that queries are forwarded to: a literal
// address, or a BindCluster of the namespace, reached at its query Service.
// +structType=atomic
// +kubebuilder:validation:XValidation:rule="has(self.address) != has(self.clusterRef)",message="set exactly one of address (a server's IP) and clusterRef (a BindCluster of this namespace)."
// +kubebuilder:validation:XValidation:rule="!has(self.clusterRef) || !has(self.port)",message="port applies to address only; a BindCluster is reached at its query Service on port 53."
type Forwarder struct {
	// address is the forwarder's IPv4 or IPv6 address.
	// +optional
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="forwarder address must be an IPv4 or IPv6 address, not a host name."
	Address string `json:"address,omitempty"`

	// port of the forwarder. Defaults to 53.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port *int32 `json:"port,omitempty"`

	// clusterRef names a BindCluster in the same namespace to forward to,
	// at its query Service's ClusterIP (stable for the Service's life, so
	// no pod address reaches the config). In a Forward zone whose
	// forwarders all name BindClusters, a forwarding cluster that validates
	// DNSSEC trusts the first one's copy of the zone: its DS records
	// (status.dnssec.ds) become a trust anchor when it is signed, and the
	// zone is excepted from validation when it is not (or its keys are not
	// published yet), since no public chain of trust vouches for it.
	// +optional
	ClusterRef *LocalObjectReference `json:"clusterRef,omitempty"`
}
