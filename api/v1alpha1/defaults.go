package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// Every default of the API lives here, once. The mutating webhooks call
// SetDefaults so that the stored object says exactly what runs; the
// controllers and render read these constants where they meet an object
// that was stored without the webhook. Where a field also carries a
// +kubebuilder:default marker (markers cannot name Go constants), a test
// compares the generated CRD with these constants.
//
// Names are not canonicalised here: that is package records' job, which
// the webhooks run before SetDefaults.

// BindCluster defaults.
const (
	// DefaultReplicas is one primary and two secondaries.
	DefaultReplicas = 3
	// MinReplicas and MaxReplicas bound spec.replicas: one primary and up
	// to 14 secondaries.
	MinReplicas = 1
	MaxReplicas = 15
	// DefaultImagePullPolicy applies to both containers.
	DefaultImagePullPolicy = corev1.PullIfNotPresent
	// PodUser is the uid and gid both containers of a BIND pod run as
	// (runAsUser, runAsGroup) and the fsGroup of its volumes: the user of
	// the operator image and of the release's BIND image. BindCluster has no
	// field for it: an image given in spec.image or spec.agentImage runs
	// as this user too, so its sh, named and rndc must be executable by
	// any user, and it needs nothing outside the pod's volumes.
	PodUser = 65532
	// DefaultServiceType of the primary and query Services.
	DefaultServiceType = corev1.ServiceTypeClusterIP
	// DefaultDNSPort, DefaultAgentPort and DefaultMetricsPort are the
	// container ports of named, the agent's API and its metrics.
	// DefaultDNSPort is also the port of forwarders and remote servers
	// that name none.
	DefaultDNSPort     = 53
	DefaultAgentPort   = 8453
	DefaultMetricsPort = 9119
	// DefaultStorageSize is the primary's claim when storage is enabled.
	DefaultStorageSize = "1Gi"
	// Replication tuning (see ReplicationTuning): NOTIFY at once, rates
	// far above BIND's 20/s, catalog updates applied at once.
	//
	// The rates are 10,000/s, not 1,000, for the limiter's tick, not for
	// the rate: above 10/s BIND releases up to 10 events every 10/rate
	// seconds (setrl in zone.c). An idle limiter lets the first event
	// through and starts ticking, so at 1,000/s the NOTIFY to a second
	// secondary, or the SOA query of a change made within 10 ms of the
	// last, waited up to 10 ms for the next tick. At 10,000/s the tick is
	// 1 ms: the slower of two secondaries served a change in 10.0–10.8 ms
	// at p50 instead of 15.7–16.1 ms (test/bench BenchmarkReplication,
	// docs/bind-facts.md).
	DefaultNotifyDelay              = 0
	DefaultNotifyRate               = 10000
	DefaultStartupNotifyRate        = 10000
	DefaultSerialQueryRate          = 10000
	DefaultCatalogMinUpdateInterval = 0
	// DefaultClusterForwardPolicy falls back to iteration when a
	// resolver's forwarders do not answer.
	DefaultClusterForwardPolicy = ForwardFirst
	// DefaultDNSSECValidation validates with BIND's built-in trust anchor.
	DefaultDNSSECValidation = DNSSECValidationAuto
	// DefaultClusterDomain is the cluster DNS domain of Service names
	// (<svc>.<namespace>.svc.<domain>), e.g. in the default SOA MNAME,
	// unless the manager is told another (--cluster-domain).
	DefaultClusterDomain = "cluster.local"
)

// BindZone defaults.
const (
	// DefaultZoneType of a zone that names none.
	DefaultZoneType = ZonePrimary
	// DefaultTTL is the TTL of records when neither the record set nor the
	// zone sets one (the zone's $TTL).
	DefaultTTL = 3600
	// Seed SOA timers (docs/behaviours.md, "Fast timers"): NOTIFY is the
	// fast path, these bound how stale a secondary can get when a NOTIFY
	// is lost.
	DefaultSOARefresh = 300
	DefaultSOARetry   = 60
	DefaultSOAExpire  = 1209600
	DefaultSOAMinimum = 60
	// DefaultSOAResponsiblePerson is the mailbox label of the default SOA
	// RNAME, hostmaster.<zone>.
	DefaultSOAResponsiblePerson = "hostmaster"
	// DefaultZoneForwardPolicy: a Forward zone asks only its forwarders.
	DefaultZoneForwardPolicy = ForwardOnly
)

// Defaults of the other kinds.
const (
	// DefaultTSIGAlgorithm of keys that name none.
	DefaultTSIGAlgorithm = TSIGHMACSHA256
	// TSIGSecretNameSuffix makes a key's default Secret "<name>-tsig".
	TSIGSecretNameSuffix = "-tsig"
	// DNSSECKeysSecretSuffix makes a signed zone's keys Secret
	// "<name>-dnssec-keys" (DNSSECKeysSecretName).
	DNSSECKeysSecretSuffix = "-dnssec-keys"
	// DefaultViewOrder and DefaultPolicyOrder place views and policies
	// that name no order, after every one that does below 100.
	DefaultViewOrder   = 100
	DefaultPolicyOrder = 100
	// DefaultRPZTrigger of a rule that names none.
	DefaultRPZTrigger = TriggerQName
	// DefaultRPZPolicyOverride keeps each rule's own action.
	DefaultRPZPolicyOverride = RPZOverrideGiven
	// DefaultRPZLog writes a line for every rewritten response.
	DefaultRPZLog = true
	// DNSSECLifetimeUnlimited is a key lifetime that never rolls, the
	// default.
	DNSSECLifetimeUnlimited = "unlimited"
	// DefaultRSAKeySize is BIND's default for RSA keys, written out so
	// the stored policy says what signs.
	DefaultRSAKeySize = 2048
)

// SetDefaults fills every default of a cluster but its images. An empty
// spec.image or spec.agentImage means the operator's current default
// (--bind-image, --agent-image), which follows the operator's release:
// written into the spec, it would pin the image of the operator that
// admitted the cluster, and an operator upgrade would leave every cluster
// on the old BIND and agent. Which images those are is the manager's
// business, not the API's, so this package holds no image name.
func (c *BindCluster) SetDefaults() {
	s := &c.Spec
	if s.Mode == "" {
		s.Mode = ModeAuthoritative
	}
	if s.Replicas == nil {
		s.Replicas = ptr.To[int32](DefaultReplicas)
	}
	if s.ImagePullPolicy == "" {
		s.ImagePullPolicy = DefaultImagePullPolicy
	}
	if s.Ports.DNS == 0 {
		s.Ports.DNS = DefaultDNSPort
	}
	if s.Ports.Agent == 0 {
		s.Ports.Agent = DefaultAgentPort
	}
	if s.Ports.Metrics == 0 {
		s.Ports.Metrics = DefaultMetricsPort
	}
	if s.PrimaryService.Type == "" {
		s.PrimaryService.Type = DefaultServiceType
	}
	if s.QueryService.Type == "" {
		s.QueryService.Type = DefaultServiceType
	}
	t := &s.Tuning
	if t.NotifyDelay == nil {
		t.NotifyDelay = ptr.To[int32](DefaultNotifyDelay)
	}
	if t.NotifyRate == nil {
		t.NotifyRate = ptr.To[int32](DefaultNotifyRate)
	}
	if t.StartupNotifyRate == nil {
		t.StartupNotifyRate = ptr.To[int32](DefaultStartupNotifyRate)
	}
	if t.SerialQueryRate == nil {
		t.SerialQueryRate = ptr.To[int32](DefaultSerialQueryRate)
	}
	if t.CatalogMinUpdateInterval == nil {
		t.CatalogMinUpdateInterval = ptr.To[int32](DefaultCatalogMinUpdateInterval)
	}
	if s.Storage == nil {
		s.Storage = &StorageSpec{}
	}
	if s.Storage.Enabled == nil {
		s.Storage.Enabled = ptr.To(true)
	}
	if *s.Storage.Enabled && s.Storage.Size == nil {
		s.Storage.Size = ptr.To(resource.MustParse(DefaultStorageSize))
	}
	if s.Mode == ModeResolver {
		if s.Recursion == nil {
			s.Recursion = &RecursionSpec{}
		}
		if s.Recursion.ForwardPolicy == "" {
			s.Recursion.ForwardPolicy = DefaultClusterForwardPolicy
		}
		if s.Recursion.DNSSECValidation == "" {
			s.Recursion.DNSSECValidation = DefaultDNSSECValidation
		}
	}
}

// SetDefaults fills the type and, for a Primary zone, defaultTTL and the
// SOA (timers and RNAME hostmaster.<zone>); a Forward zone gets its
// forwardPolicy. spec.zoneName must be canonical (records.CanonicalZone).
//
// An unset SOA MNAME stays unset: the controller names the cluster's query
// Service, which lies outside the zone. A default inside the zone
// (ns1.<zone>) would need an address record BIND 9.18 insists on before it
// loads the zone.
// IsPrimary tells a Primary zone, including one stored without a type
// (DefaultZoneType): the only kind whose data the operator holds.
func (s *BindZoneSpec) IsPrimary() bool {
	return s.Type == ZonePrimary || s.Type == ""
}

func (z *BindZone) SetDefaults() {
	s := &z.Spec
	if s.Type == "" {
		s.Type = DefaultZoneType
	}
	switch s.Type {
	case ZonePrimary:
		if s.DefaultTTL == nil {
			s.DefaultTTL = ptr.To[TTL](DefaultTTL)
		}
		if s.SOA == nil {
			s.SOA = &SOASpec{}
		}
		soa := s.SOA
		if soa.ResponsiblePerson == "" {
			soa.ResponsiblePerson = DefaultResponsiblePerson(string(s.ZoneName))
		}
		if soa.Refresh == nil {
			soa.Refresh = ptr.To[int32](DefaultSOARefresh)
		}
		if soa.Retry == nil {
			soa.Retry = ptr.To[int32](DefaultSOARetry)
		}
		if soa.Expire == nil {
			soa.Expire = ptr.To[int32](DefaultSOAExpire)
		}
		if soa.Minimum == nil {
			soa.Minimum = ptr.To[int32](DefaultSOAMinimum)
		}
	case ZoneForward:
		if s.ForwardPolicy == "" {
			s.ForwardPolicy = DefaultZoneForwardPolicy
		}
	}
}

// DefaultResponsiblePerson is the default SOA RNAME of a zone given in
// canonical form: hostmaster.<zone>, or, when that would be longer than a
// domain name may be, the zone name itself (the mailbox <first label>@<the
// rest>). A zone name that is itself too long gets none: spec.zoneName's own
// rule refuses it, and a derived field must not be blamed for it.
func DefaultResponsiblePerson(zone string) DomainName {
	if zone == "." || zone == "" {
		return DomainName(DefaultSOAResponsiblePerson + "." + zone)
	}
	if len(zone) > MaxDomainNameLength {
		return ""
	}
	if r := DefaultSOAResponsiblePerson + "." + zone; len(r) <= MaxDomainNameLength {
		return DomainName(r)
	}
	return DomainName(zone)
}

// EffectiveDefaultTTL is the TTL of the zone's records that set none.
func (z *BindZone) EffectiveDefaultTTL() int32 {
	if z.Spec.DefaultTTL != nil {
		return int32(*z.Spec.DefaultTTL)
	}
	return DefaultTTL
}

// SetDefaults fills the record's TTL from its zone's defaultTTL. zone nil
// (not created yet) leaves it unset: the TTL is filled when the record is
// next admitted with its zone, and the controller falls back to the zone's.
func (r *DNSRecord) SetDefaults(zone *BindZone) {
	if r.Spec.TTL == nil && zone != nil {
		r.Spec.TTL = ptr.To(TTL(zone.EffectiveDefaultTTL()))
	}
}

// SetDefaults fills keyName (the object's name), algorithm and secretName
// ("<name>-tsig").
func (k *BindTSIGKey) SetDefaults() {
	s := &k.Spec
	if s.KeyName == "" {
		s.KeyName = DomainName(k.Name)
	}
	if s.Algorithm == "" {
		s.Algorithm = DefaultTSIGAlgorithm
	}
	if s.SecretName == "" && k.Name != "" {
		s.SecretName = k.Name + TSIGSecretNameSuffix
	}
}

// SetDefaults fills the view's order when it is unset; an order the user
// wrote, 0 included, stays.
func (v *BindView) SetDefaults() {
	if v.Spec.Order == nil {
		v.Spec.Order = ptr.To[int32](DefaultViewOrder)
	}
}

// EffectiveOrder is the view's order, DefaultViewOrder when unset.
func (s *BindViewSpec) EffectiveOrder() int32 { return ptr.Deref(s.Order, DefaultViewOrder) }

// EffectiveOrder is the policy's order, DefaultPolicyOrder when unset.
func (s *BindPolicySpec) EffectiveOrder() int32 { return ptr.Deref(s.Order, DefaultPolicyOrder) }

// SetDefaults fills order, policyOverride, log and each rule's trigger
// where unset; what the user wrote (an order of 0, log: false) stays.
func (p *BindPolicy) SetDefaults() {
	s := &p.Spec
	if s.Order == nil {
		s.Order = ptr.To[int32](DefaultPolicyOrder)
	}
	if s.PolicyOverride == "" {
		s.PolicyOverride = DefaultRPZPolicyOverride
	}
	if s.Log == nil {
		s.Log = ptr.To(DefaultRPZLog)
	}
	for i := range s.Rules {
		if s.Rules[i].Trigger == "" {
			s.Rules[i].Trigger = DefaultRPZTrigger
		}
	}
}

// SetDefaults fills each key's lifetime and, for RSA keys, its size.
func (p *BindDNSSECPolicy) SetDefaults() {
	for i := range p.Spec.Keys {
		k := &p.Spec.Keys[i]
		if k.Lifetime == "" {
			k.Lifetime = DNSSECLifetimeUnlimited
		}
		if k.Algorithm.IsRSA() && k.KeySize == nil {
			k.KeySize = ptr.To[int32](DefaultRSAKeySize)
		}
	}
}

// AddressPort is the forwarder's address and its port, DefaultDNSPort when
// unset. A forwarder naming a BindCluster is "BindCluster/<name>" on port
// 53 (its query Service), so duplicates are found either way.
func (f Forwarder) AddressPort() (string, int32) {
	if f.ClusterRef != nil {
		return "BindCluster/" + f.ClusterRef.Name, DefaultDNSPort
	}
	return f.Address, ptr.Deref(f.Port, DefaultDNSPort)
}

// AddressPort is the server's address and its port, DefaultDNSPort when
// unset.
func (r RemoteServer) AddressPort() (string, int32) {
	return r.Address, ptr.Deref(r.Port, DefaultDNSPort)
}

// DNSSECKeysSecretName is the Secret that holds a copy of the DNSSEC keys
// of the BindZone named zone: "<zone>-dnssec-keys" (derivedName).
func DNSSECKeysSecretName(zone string) string {
	return derivedName(zone, DNSSECKeysSecretSuffix)
}

// SeedConfigMapName is the ConfigMap bind-operator import writes part n
// (from 0) of the seed of the BindZone named zone into:
// "<zone>-seed-<n>" (derivedName).
func SeedConfigMapName(zone string, n int) string {
	return derivedName(zone, "-seed-"+strconv.Itoa(n))
}

// derivedName is the name of an object made for the object named owner:
// owner+suffix, or, when that would exceed an object name's 253
// characters, owner cut short with a hash of the whole name before the
// suffix, so two owners never share one.
func derivedName(owner, suffix string) string {
	const max = 253
	if len(owner)+len(suffix) <= max {
		return owner + suffix
	}
	sum := sha256.Sum256([]byte(owner))
	h := hex.EncodeToString(sum[:4])
	keep := strings.TrimRight(owner[:max-len(suffix)-len(h)-1], ".-")
	return keep + "-" + h + suffix
}

// DNSSECKeyFileKey is the data key of one key file in a keys Secret:
// "<algorithm>-<tag>.<kind>" ("013-12345.private"), named's
// K<zone>.+013+12345.private without the zone, which the Secret is for,
// and with '-' for the '+' a data key cannot hold.
func DNSSECKeyFileKey(algorithm uint8, tag uint16, kind string) string {
	return fmt.Sprintf("%03d-%05d.%s", algorithm, tag, kind)
}

// ParseDNSSECKeyFileKey reads a DNSSECKeyFileKey back; kind is "key",
// "private" or "state".
func ParseDNSSECKeyFileKey(k string) (algorithm uint8, tag uint16, kind string, ok bool) {
	if len(k) < 11 || k[3] != '-' || k[9] != '.' {
		return 0, 0, "", false
	}
	a, err1 := strconv.ParseUint(k[:3], 10, 8)
	t, err2 := strconv.ParseUint(k[4:9], 10, 16)
	kind = k[10:]
	if err1 != nil || err2 != nil || a == 0 || (kind != "key" && kind != "private" && kind != "state") {
		return 0, 0, "", false
	}
	if DNSSECKeyFileKey(uint8(a), uint16(t), kind) != k {
		return 0, 0, "", false
	}
	return uint8(a), uint16(t), kind, true
}
