package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ZoneType is the role of the cluster for a zone.
// +kubebuilder:validation:Enum=Primary;Secondary;Forward;Stub
type ZoneType string

const (
	// ZonePrimary: the cluster's primary pod holds the authoritative data.
	ZonePrimary ZoneType = "Primary"
	// ZoneSecondary: the cluster transfers the zone from external primaries.
	ZoneSecondary ZoneType = "Secondary"
	// ZoneForward: queries for the zone go to forwarders.
	ZoneForward ZoneType = "Forward"
	// ZoneStub: the cluster keeps only the zone's NS records from primaries.
	ZoneStub ZoneType = "Stub"
)

// BindZoneSpec is a DNS zone served by a BindCluster.
//
// Rules that need other objects (the referenced cluster's mode, that names
// lie inside the zone, CNAME exclusivity across record sets, rdata syntax)
// are checked by the validating webhook, not here.
// +kubebuilder:validation:XValidation:rule="self.type == 'Forward' || !has(self.forwarders)",message="forwarders only apply to Forward zones; set type: Forward or remove forwarders."
// +kubebuilder:validation:XValidation:rule="self.type != 'Forward' || (has(self.forwarders) && size(self.forwarders) > 0)",message="a Forward zone needs at least one forwarder."
// +kubebuilder:validation:XValidation:rule="self.type == 'Forward' || !has(self.forwardPolicy)",message="forwardPolicy only applies to Forward zones."
// +kubebuilder:validation:XValidation:rule="!(self.type in ['Secondary', 'Stub']) || (has(self.primaries) && size(self.primaries) > 0)",message="Secondary and Stub zones need at least one entry in primaries to transfer from."
// +kubebuilder:validation:XValidation:rule="self.type in ['Secondary', 'Stub'] || !has(self.primaries)",message="primaries only apply to Secondary and Stub zones; a Primary zone is replicated to the cluster's secondaries automatically."
// +kubebuilder:validation:XValidation:rule="self.type == 'Primary' || !has(self.records)",message="records can only be declared on Primary zones."
// +kubebuilder:validation:XValidation:rule="self.type == 'Primary' || !has(self.soa)",message="soa can only be set on Primary zones."
// +kubebuilder:validation:XValidation:rule="self.type == 'Primary' || !has(self.updateKeyRef)",message="updateKeyRef (dynamic updates) only applies to Primary zones."
// +kubebuilder:validation:XValidation:rule="!has(self.allowUpdateKeyTransfer) || !self.allowUpdateKeyTransfer || has(self.updateKeyRef)",message="allowUpdateKeyTransfer needs updateKeyRef: name the key that may read the zone.",fieldPath=".allowUpdateKeyTransfer"
// +kubebuilder:validation:XValidation:rule="!has(self.allowUpdateKeyTransfer) || !self.allowUpdateKeyTransfer || !has(self.catalogZoneRef)",message="allowUpdateKeyTransfer cannot be used on a catalog member: the secondaries take a member's transfer rules from the catalog, which cannot name keys. Take the zone out of the catalog, or send the client's transfers to the primary Service and leave this off.",fieldPath=".allowUpdateKeyTransfer"
// +kubebuilder:validation:XValidation:rule="self.type == 'Primary' || !has(self.allowedRecords)",message="allowedRecords only applies to Primary zones, the only ones DNSRecords can update.",fieldPath=".allowedRecords"
// +kubebuilder:validation:XValidation:rule="self.type == 'Primary' || !has(self.dnssecPolicyRef)",message="dnssecPolicyRef only applies to Primary zones; secondaries serve the signed zone they transfer."
// +kubebuilder:validation:XValidation:rule="self.type == 'Primary' || !has(self.catalogZoneRef)",message="catalogZoneRef only applies to Primary zones."
// +kubebuilder:validation:XValidation:rule="self.type != 'Forward' || !has(self.allowTransfer)",message="allowTransfer does not apply to Forward zones, which hold no data."
// +kubebuilder:validation:XValidation:rule="self.type == 'Primary' || !has(self.defaultTTL)",message="defaultTTL only applies to Primary zones."
// +kubebuilder:validation:XValidation:rule="self.type != 'Primary' || self.zoneName != '.'",message="the root zone cannot be a Primary zone here; use a Forward zone for \".\" or name a real zone.",fieldPath=".zoneName"
// +kubebuilder:validation:XValidation:rule="self.type == 'Primary' || !has(self.externalSecondaries)",message="externalSecondaries only apply to Primary zones: a Secondary zone's own primaries notify its other secondaries.",fieldPath=".externalSecondaries"
// +kubebuilder:validation:XValidation:rule="self.type == 'Primary' || !has(self.seedFrom)",message="seedFrom only applies to Primary zones; Secondary zones transfer their data from their primaries.",fieldPath=".seedFrom"
// +kubebuilder:validation:XValidation:rule="has(self.seedFrom) == has(oldSelf.seedFrom)",message="seedFrom can only be set when the zone is created; create a new BindZone to load another zone file.",fieldPath=".seedFrom"
type BindZoneSpec struct {
	// clusterRef names the BindCluster that serves the zone. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterRef is immutable; create a new BindZone for the other cluster."
	ClusterRef LocalObjectReference `json:"clusterRef"`

	// zoneName is the zone's domain, e.g. "example.com". Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="zoneName is immutable; create a new BindZone for the other name."
	ZoneName DomainName `json:"zoneName"`

	// type is Primary, Secondary, Forward or Stub. Defaults to Primary.
	// +optional
	// +kubebuilder:default=Primary
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="type is immutable; delete and recreate the zone to change its type."
	Type ZoneType `json:"type,omitempty"`

	// viewRef places the zone in a BindView. When the cluster has views,
	// every zone must name one.
	// +optional
	ViewRef *LocalObjectReference `json:"viewRef,omitempty"`

	// defaultTTL is the TTL of records that set none, in seconds ($TTL).
	// Defaults to 3600.
	// +optional
	DefaultTTL *TTL `json:"defaultTTL,omitempty"`

	// soa sets the zone's SOA. Its timers default to refresh 300, retry 60,
	// expire 1209600 and minimum 60 so that NOTIFY is the fast path and the
	// fallback is bounded.
	// +optional
	SOA *SOASpec `json:"soa,omitempty"`

	// records are the zone's record sets; at most one per name and type.
	// +optional
	// +kubebuilder:validation:MaxItems=5000
	// +listType=map
	// +listMapKey=name
	// +listMapKey=type
	Records []RecordSet `json:"records,omitempty"`

	// updateKeyRef names a BindTSIGKey allowed to send RFC 2136 UPDATEs to
	// the zone (e.g. external-dns). DNSRecords of the zone sign with it.
	// +optional
	UpdateKeyRef *LocalObjectReference `json:"updateKeyRef,omitempty"`

	// allowedRecords lets DNSRecords of other namespaces hold names in this
	// zone, the way a Gateway's allowedRoutes admits routes. Without it only
	// DNSRecords of the zone's own namespace may.
	// +optional
	AllowedRecords *AllowedRecords `json:"allowedRecords,omitempty"`

	// allowUpdateKeyTransfer lets the update key (updateKeyRef) read the
	// whole zone by AXFR, from the primary and from every secondary, so
	// through the query Service. external-dns' RFC 2136 provider lists a
	// zone that way (its default --rfc2136-axfr) before it plans changes.
	// Off by default: a key that may write records does not otherwise need
	// to read them all. Not for catalog members: the secondaries take a
	// member's transfer rules from the catalog, which cannot name keys.
	// +optional
	AllowUpdateKeyTransfer bool `json:"allowUpdateKeyTransfer,omitempty"` //nolint:kubeapilinter // unset is false, the default: nothing fills it, so an explicit false is never replaced

	// allowTransfer lists who may transfer the zone besides the cluster's
	// own secondaries, which always may (keyed). Every pod allows them, the
	// secondaries too: clients of the query Service reach any pod.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	AllowTransfer []AddressMatchElement `json:"allowTransfer,omitempty"`

	// allowQuery limits who may query the zone. Defaults to the cluster's.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	AllowQuery []AddressMatchElement `json:"allowQuery,omitempty"`

	// forwarders of a Forward zone.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Forwarders []Forwarder `json:"forwarders,omitempty"`

	// forwardPolicy of a Forward zone: First or Only. Defaults to Only.
	// +optional
	ForwardPolicy ForwardPolicy `json:"forwardPolicy,omitempty"`

	// primaries of a Secondary or Stub zone: the external servers to
	// transfer from, each optionally keyed.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Primaries []RemoteServer `json:"primaries,omitempty"`

	// externalSecondaries of a Primary zone: servers outside the cluster
	// that transfer the zone (a hidden primary). Each gets a NOTIFY when the
	// zone changes (also-notify, signed with its key) and may transfer the
	// zone: with its key when keyRef is set (then only with the key), else
	// from its address. status.externalSecondaries says whether each serves
	// the primary's serial.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	ExternalSecondaries []RemoteServer `json:"externalSecondaries,omitempty"`

	// dnssecPolicyRef names a BindDNSSECPolicy that signs the zone.
	// +optional
	DNSSECPolicyRef *LocalObjectReference `json:"dnssecPolicyRef,omitempty"`

	// catalogZoneRef adds the zone to a BindCatalogZone, so every secondary
	// provisions it without a config change.
	// +optional
	CatalogZoneRef *LocalObjectReference `json:"catalogZoneRef,omitempty"`

	// seedFrom loads the zone from a zone file kept in ConfigMaps, for a
	// zone larger than one BindZone holds (bind-operator import writes
	// them). The primary loads the file whenever it does not have the zone
	// (the zone's creation, a lost volume); records and DNSRecords are
	// applied on top, and the rest of the file is served and transferred
	// but never changed or removed by the operator. Primary zones only;
	// set at creation and immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="seedFrom is immutable; create a new BindZone to load another zone file."
	SeedFrom *ZoneSeed `json:"seedFrom,omitempty"`
}

// ZoneSeed names the ConfigMaps that hold a zone file in parts.
type ZoneSeed struct {
	// configMaps name, in order, ConfigMaps of the zone's namespace whose
	// data key "zone" holds the next part of the zone file (a ConfigMap
	// holds at most 1 MiB). Each must carry the annotation
	// bind.unkin.net/seed-for naming this BindZone: the operator reads no
	// other.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +kubebuilder:validation:XValidation:rule="self.all(c, self.exists_one(d, d.name == c.name))",message="each ConfigMap may be named once; list the parts of the zone file in order, each once."
	ConfigMaps []LocalObjectReference `json:"configMaps"`

	// sha256 is the lowercase hex SHA-256 of the whole zone file (the
	// parts joined): a file that differs is not loaded.
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256"`
}

// SOASpec is a zone's start of authority. Unset fields take the defaults.
// Edits after the zone was created are applied to the served SOA, with the
// serial one up.
// +kubebuilder:validation:XValidation:rule="!has(self.retry) || !has(self.refresh) || self.retry <= self.refresh",message="retry must not exceed refresh; a retry is a faster refresh after a failure.",messageExpression="'retry must not exceed refresh (%d); a retry is a faster refresh after a failure.'.format([self.refresh])",fieldPath=".retry"
// +kubebuilder:validation:XValidation:rule="!has(self.expire) || !has(self.refresh) || self.expire >= self.refresh",message="expire must be at least refresh, or secondaries drop the zone before they try to refresh it.",messageExpression="'expire must be at least refresh (%d), or secondaries drop the zone before they try to refresh it.'.format([self.refresh])",fieldPath=".expire"
type SOASpec struct {
	// primaryNameServer is the SOA MNAME, also the NS of the zone's seed.
	// Defaults to the cluster's query Service,
	// <cluster>.<namespace>.svc.<cluster domain> (the operator's
	// --cluster-domain, cluster.local unless set). A name inside the zone
	// needs an A or AAAA record set in records.
	// +optional
	PrimaryNameServer DomainName `json:"primaryNameServer,omitempty"`

	// responsiblePerson is the SOA RNAME as a mailbox domain, e.g.
	// "hostmaster.example.com". Defaults to hostmaster.<zone>.
	// +optional
	ResponsiblePerson DomainName `json:"responsiblePerson,omitempty"`

	// refresh in seconds. Defaults to 300.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	Refresh *int32 `json:"refresh,omitempty"`

	// retry in seconds. Defaults to 60.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	Retry *int32 `json:"retry,omitempty"`

	// expire in seconds. Defaults to 1209600 (14 days).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	Expire *int32 `json:"expire,omitempty"`

	// minimum is the negative-caching TTL in seconds. Defaults to 60.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	Minimum *int32 `json:"minimum,omitempty"`
}

// SecondaryZoneStatus is what one secondary pod serves.
type SecondaryZoneStatus struct {
	// pod is the secondary's pod name.
	// +required
	Pod string `json:"pod"`
	// serial the secondary serves.
	// +optional
	Serial *int64 `json:"serial,omitempty"`
	// inSync is true when the secondary serves the primary's serial.
	// +required
	InSync bool `json:"inSync"`
}

// ExternalSecondaryStatus is what one external secondary serves.
type ExternalSecondaryStatus struct {
	// server is the secondary's address and port ("192.0.2.1:53").
	// +required
	// +kubebuilder:validation:MaxLength=64
	Server string `json:"server"`
	// serial the secondary serves, when it answered.
	// +optional
	Serial *int64 `json:"serial,omitempty"`
	// inSync is true when the secondary serves the primary's serial.
	// +required
	InSync bool `json:"inSync"`
	// message says why the secondary is not in sync, in the words of its
	// answer (or of its silence).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// AllowedRecords says which DNSRecords of other namespaces a zone admits.
// The zone's own namespace is never limited by it.
type AllowedRecords struct {
	// namespaces selects the namespaces by their labels ({} selects every
	// namespace; kubernetes.io/metadata.name selects one by name).
	// +required
	Namespaces metav1.LabelSelector `json:"namespaces"`

	// nameSuffixes, when set, admits only names (relative to the zone) equal
	// to one of these or ending in "." and one of these: "team-a" admits
	// "team-a" and "api.team-a", not "xteam-a". "@" is the apex.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	NameSuffixes []RecordName `json:"nameSuffixes,omitempty"`

	// types, when set, admits only these record types.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	Types []RecordType `json:"types,omitempty"`
}

// BindZoneStatus is the observed state of a BindZone.
type BindZoneStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready and, where it applies, Conflict.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// serial the primary serves.
	// +optional
	Serial *int64 `json:"serial,omitempty"`

	// recordCount is the number of records declared by the zone.
	// +optional
	RecordCount int32 `json:"recordCount,omitempty"`

	// secondaries report, per secondary pod, whether it serves the primary's
	// serial (replication lag).
	// +optional
	// +listType=map
	// +listMapKey=pod
	// +kubebuilder:validation:MaxItems=16
	Secondaries []SecondaryZoneStatus `json:"secondaries,omitempty"`

	// externalSecondaries report, per spec.externalSecondaries entry,
	// whether it serves the primary's serial.
	// +optional
	// +listType=map
	// +listMapKey=server
	// +kubebuilder:validation:MaxItems=16
	ExternalSecondaries []ExternalSecondaryStatus `json:"externalSecondaries,omitempty"`

	// managedRecords are the record sets of spec.records this zone last
	// wrote, each with a digest of the data written (never the data). A set
	// removed from spec.records is deleted only while the primary still
	// serves data with that digest, so nobody else's edit is ever deleted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5000
	ManagedRecords []ManagedRecordSet `json:"managedRecords,omitempty"`

	// rejectedRecords are the record sets of spec.records the primary
	// refused on the last apply, with BIND's rcode; the others still apply.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	RejectedRecords []RejectedRecordSet `json:"rejectedRecords,omitempty"`

	// lastDriftCheck is when the served records were last compared with
	// spec.records (an AXFR of the primary).
	// +optional
	LastDriftCheck *metav1.Time `json:"lastDriftCheck,omitempty"`

	// primarySeededAt is when the primary last started the zone from its
	// seed: when it was created, or after a primary without persistent
	// storage restarted and lost it. The zone's DNSRecords re-apply their
	// data when it moves, rather than at their next drift check.
	// +optional
	PrimarySeededAt *metav1.Time `json:"primarySeededAt,omitempty"`

	// observedResync is the value of the bind.unkin.net/resync annotation
	// the last drift check answered.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ObservedResync string `json:"observedResync,omitempty"`

	// dnssec is what the parent zone needs to trust the zone, when a
	// BindDNSSECPolicy signs it.
	// +optional
	DNSSEC *ZoneDNSSECStatus `json:"dnssec,omitempty"`
}

// ZoneDNSSECStatus is what a parent zone needs to trust a signed zone.
type ZoneDNSSECStatus struct {
	// ds are the DS records to publish in the parent zone: one per
	// key-signing key (KSK or CSK) the primary publishes, with a SHA-256
	// digest, in presentation format ("<key tag> <algorithm> 2 <digest>").
	// Empty while named is still generating the keys.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=256
	DS []string `json:"ds,omitempty"`
	// keysSecret is the Secret, in the zone's namespace, that holds a copy
	// of the zone's key files (named's .key, .private and .state): the
	// operator restores them onto a primary volume that lost them, so the
	// DS above stays valid. Set once the copy is written.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	KeysSecret string `json:"keysSecret,omitempty"`
}

// ManagedRecordSet is one record set a BindZone wrote.
type ManagedRecordSet struct {
	// name is the owner name relative to the zone ("@" for the apex).
	// +kubebuilder:validation:MaxLength=254
	// +required
	Name string `json:"name"`
	// type is the record type.
	// +kubebuilder:validation:MaxLength=16
	// +required
	Type string `json:"type"`
	// digest is a SHA-256 prefix over the TTL and canonical values written.
	// +kubebuilder:validation:MaxLength=64
	// +required
	Digest string `json:"digest"`
}

// RejectedRecordSet is a record set the primary refused.
type RejectedRecordSet struct {
	// name is the owner name relative to the zone.
	// +kubebuilder:validation:MaxLength=254
	// +required
	Name string `json:"name"`
	// type is the record type.
	// +kubebuilder:validation:MaxLength=16
	// +required
	Type string `json:"type"`
	// rcode is BIND's response code, e.g. REFUSED or NOTZONE; empty when
	// the set never reached BIND (invalid data).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Rcode string `json:"rcode,omitempty"`
	// message says why.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// AnnotationResync on a BindZone asks for a drift check now: set it to any
// new value (e.g. a timestamp) and the zone compares what named serves with
// spec.records and repairs declared data.
const AnnotationResync = "bind.unkin.net/resync"

// MaxZoneRecordSets is the MaxItems of spec.records (crd_test.go holds
// them equal): a zone with more sets is loaded from a seed.
const MaxZoneRecordSets = 5000

// A zone file kept in ConfigMaps (spec.seedFrom). AnnotationSeedFor on
// each ConfigMap names the BindZone that may load it: the operator reads a
// ConfigMap for a zone only with it, so that a BindZone cannot expose
// ConfigMaps of its namespace that were not written for it. SeedDataKey is
// the data key holding the part. MaxSeedPartBytes keeps a part under a
// ConfigMap's 1 MiB; MaxSeedBytes bounds the file (16 parts).
const (
	AnnotationSeedFor = "bind.unkin.net/seed-for"
	SeedDataKey       = "zone"
	MaxSeedPartBytes  = 900 << 10
	MaxSeedBytes      = 16 * MaxSeedPartBytes
)

// BindZoneZoneNameField is spec.zoneName as a field selector: the API
// server filters BindZones by it (`kubectl get bindzones --field-selector
// spec.zoneName=example.com`), so the webhook's "a cluster serves each zone
// once" rule reads the zones of that name, not every zone of the namespace.
const BindZoneZoneNameField = "spec.zoneName"

// BindZone is a DNS zone served by a BindCluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:selectablefield:JSONPath=`.spec.zoneName`
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bzone,categories=bind
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zoneName`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Serial",type=integer,JSONPath=`.status.serial`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BindZone struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired zone.
	// +required
	Spec BindZoneSpec `json:"spec"`

	// status is the observed state.
	// +optional
	Status BindZoneStatus `json:"status,omitempty"`
}

// BindZoneList is a list of BindZones.
// +kubebuilder:object:root=true
type BindZoneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BindZone `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BindZone{}, &BindZoneList{})
}
