package v1alpha1

// RecordType is a DNS resource record type the operator manages.
// +kubebuilder:validation:Enum=A;AAAA;CNAME;MX;TXT;SRV;CAA;PTR;NS;DS;TLSA;SSHFP;HTTPS;SVCB;NAPTR;DNAME;LOC;URI
type RecordType string

// RecordTypes are the types of the enum above, in its order: the
// allow-list of package records, which parses their data.
var RecordTypes = []RecordType{"A", "AAAA", "CNAME", "MX", "TXT", "SRV", "CAA", "PTR", "NS", "DS", "TLSA", "SSHFP", "HTTPS", "SVCB", "NAPTR", "DNAME", "LOC", "URI"}

// RecordName is a record owner name. The canonical form, which the mutating
// webhook produces, is relative to the zone and lowercase: "@" for the apex,
// "www", "*.apps", "_sip._tcp". An absolute name (ending in ".") inside the
// zone is accepted and made relative.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=254
// +kubebuilder:validation:Pattern=`^(@|(\*\.)?([A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?)(\.[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?)*\.?|\*)$`
type RecordName string

// RecordSet is every record of one type at one owner name.
// +kubebuilder:validation:XValidation:rule="self.type != 'CNAME' || size(self.values) == 1",message="a CNAME record set holds exactly one value; a name can alias only one target."
// +kubebuilder:validation:XValidation:rule="self.type != 'CNAME' || self.name != '@'",message="a CNAME cannot be placed at the zone apex (@), which must hold SOA and NS records; use A/AAAA records there instead."
// +kubebuilder:validation:XValidation:rule="self.type != 'DNAME' || size(self.values) == 1",message="a DNAME record set holds exactly one value."
// +kubebuilder:validation:XValidation:rule="self.type != 'DS' || self.name != '@'",message="DS records for the zone itself belong in the parent zone; place DS records at a delegated child name.",fieldPath=".type"
type RecordSet struct {
	// name is the owner name relative to the zone ("@" for the apex), e.g.
	// "www" or "_sip._tcp".
	// +required
	Name RecordName `json:"name"`

	// type is the record type, e.g. A, AAAA, CNAME, MX, TXT, SRV.
	// +required
	Type RecordType `json:"type"`

	// ttl in seconds. Defaults to the zone's defaultTTL.
	// +optional
	TTL *TTL `json:"ttl,omitempty"`

	// values are the record data in zone-file presentation format, one per
	// record, e.g. "192.0.2.1" for A or "10 mail.example.com." for MX.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=4096
	// +listType=atomic
	Values []string `json:"values"`
}
