package cel

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func baseZone() *v1.BindZone {
	return &v1.BindZone{Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "authoritative"},
		ZoneName:   "example.com",
		Type:       v1.ZonePrimary,
		Records: []v1.RecordSet{
			{Name: "www", Type: "A", Values: []string{"192.0.2.1"}},
		},
	}}
}

func forwardZone(z *v1.BindZone) {
	z.Spec.Type = v1.ZoneForward
	z.Spec.Records = nil
	z.Spec.Forwarders = []v1.Forwarder{{Address: "192.0.2.53"}}
}

func secondaryZone(z *v1.BindZone) {
	z.Spec.Type = v1.ZoneSecondary
	z.Spec.Records = nil
	z.Spec.Primaries = []v1.RemoteServer{{Address: "192.0.2.1"}}
}

func TestBindZoneCreate(t *testing.T) {
	ref := &v1.LocalObjectReference{Name: "x"}
	runCreateCases(t, baseZone, []createCase[*v1.BindZone]{
		{desc: "valid primary"},
		{desc: "valid forward", mutate: forwardZone},
		{desc: "valid secondary", mutate: secondaryZone},
		{desc: "valid root forward zone", mutate: func(z *v1.BindZone) { forwardZone(z); z.Spec.ZoneName = "." }},
		{desc: "valid reverse zone", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = "2.0.192.in-addr.arpa." }},
		{desc: "missing zone name", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = "" },
			wantErrors: []string{"spec.zoneName"}},
		{desc: "zone name with a space", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = "exa mple.com" },
			wantErrors: []string{"spec.zoneName", "should match"}},
		{desc: "zone name with quote injection", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = `example.com"; include "/etc/passwd` },
			wantErrors: []string{"spec.zoneName", "should match"}},
		{desc: "zone name with empty label", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = "example..com" },
			wantErrors: []string{"spec.zoneName", "should match"}},
		{desc: "label longer than 63", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = v1.DomainName(fmt.Sprintf("%064d.com", 0)) },
			wantErrors: []string{"spec.zoneName", "should match"}},
		{desc: "unknown zone type", mutate: func(z *v1.BindZone) { z.Spec.Type = "Master" },
			wantErrors: []string{"spec.type", `Unsupported value: "Master"`}},
		{desc: "forwarders on a primary zone", mutate: func(z *v1.BindZone) { z.Spec.Forwarders = []v1.Forwarder{{Address: "192.0.2.53"}} },
			wantErrors: []string{"forwarders only apply to Forward zones"}},
		{desc: "forward zone without forwarders", mutate: func(z *v1.BindZone) { forwardZone(z); z.Spec.Forwarders = nil },
			wantErrors: []string{"a Forward zone needs at least one forwarder"}},
		{desc: "forward policy on a primary zone", mutate: func(z *v1.BindZone) { z.Spec.ForwardPolicy = v1.ForwardOnly },
			wantErrors: []string{"forwardPolicy only applies to Forward zones"}},
		{desc: "secondary without primaries", mutate: func(z *v1.BindZone) { secondaryZone(z); z.Spec.Primaries = nil },
			wantErrors: []string{"Secondary and Stub zones need at least one entry in primaries"}},
		{desc: "stub without primaries", mutate: func(z *v1.BindZone) { z.Spec.Type = v1.ZoneStub; z.Spec.Records = nil },
			wantErrors: []string{"Secondary and Stub zones need at least one entry in primaries"}},
		{desc: "primaries on a primary zone", mutate: func(z *v1.BindZone) { z.Spec.Primaries = []v1.RemoteServer{{Address: "192.0.2.1"}} },
			wantErrors: []string{"primaries only apply to Secondary and Stub zones"}},
		{desc: "records on a secondary zone", mutate: func(z *v1.BindZone) {
			secondaryZone(z)
			z.Spec.Records = []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}}
		}, wantErrors: []string{"records can only be declared on Primary zones"}},
		{desc: "soa on a forward zone", mutate: func(z *v1.BindZone) { forwardZone(z); z.Spec.SOA = &v1.SOASpec{} },
			wantErrors: []string{"soa can only be set on Primary zones"}},
		{desc: "update key on a secondary zone", mutate: func(z *v1.BindZone) { secondaryZone(z); z.Spec.UpdateKeyRef = ref },
			wantErrors: []string{"updateKeyRef (dynamic updates) only applies to Primary zones"}},
		{desc: "update key transfers", mutate: func(z *v1.BindZone) { z.Spec.UpdateKeyRef = ref; z.Spec.AllowUpdateKeyTransfer = true }},
		{desc: "transfer without an update key", mutate: func(z *v1.BindZone) { z.Spec.AllowUpdateKeyTransfer = true },
			wantErrors: []string{"spec.allowUpdateKeyTransfer: Invalid value: allowUpdateKeyTransfer needs updateKeyRef: name the key that may read the zone."}},
		{desc: "update key transfers a catalog member", mutate: func(z *v1.BindZone) {
			z.Spec.UpdateKeyRef, z.Spec.CatalogZoneRef, z.Spec.AllowUpdateKeyTransfer = ref, ref, true
		}, wantErrors: []string{"allowUpdateKeyTransfer cannot be used on a catalog member"}},
		{desc: "dnssec policy on a forward zone", mutate: func(z *v1.BindZone) { forwardZone(z); z.Spec.DNSSECPolicyRef = ref },
			wantErrors: []string{"dnssecPolicyRef only applies to Primary zones"}},
		{desc: "catalog membership of a secondary zone", mutate: func(z *v1.BindZone) { secondaryZone(z); z.Spec.CatalogZoneRef = ref },
			wantErrors: []string{"catalogZoneRef only applies to Primary zones"}},
		{desc: "allowTransfer on a forward zone", mutate: func(z *v1.BindZone) {
			forwardZone(z)
			z.Spec.AllowTransfer = []v1.AddressMatchElement{{Builtin: "any"}}
		}, wantErrors: []string{"allowTransfer does not apply to Forward zones"}},
		{desc: "defaultTTL on a secondary zone", mutate: func(z *v1.BindZone) { secondaryZone(z); z.Spec.DefaultTTL = ptr.To[v1.TTL](60) },
			wantErrors: []string{"defaultTTL only applies to Primary zones"}},
		{desc: "negative default TTL", mutate: func(z *v1.BindZone) { z.Spec.DefaultTTL = ptr.To[v1.TTL](-5) },
			wantErrors: []string{"spec.defaultTTL", "should be greater than or equal to 0"}},
		{desc: "primary address is a host name", mutate: func(z *v1.BindZone) {
			secondaryZone(z)
			z.Spec.Primaries = []v1.RemoteServer{{Address: "ns1.example.net"}}
		}, wantErrors: []string{"spec.primaries[0].address", "address must be an IPv4 or IPv6 address, not a host name"}},
		{desc: "primary port zero", mutate: func(z *v1.BindZone) {
			secondaryZone(z)
			z.Spec.Primaries[0].Port = ptr.To[int32](0)
		}, wantErrors: []string{"spec.primaries[0].port", "should be greater than or equal to 1"}},
		{desc: "SOA refresh zero", mutate: func(z *v1.BindZone) { z.Spec.SOA = &v1.SOASpec{Refresh: ptr.To[int32](0)} },
			wantErrors: []string{"spec.soa.refresh", "should be greater than or equal to 1"}},
		{desc: "SOA minimum above a day", mutate: func(z *v1.BindZone) { z.Spec.SOA = &v1.SOASpec{Minimum: ptr.To[int32](90000)} },
			wantErrors: []string{"spec.soa.minimum", "should be less than or equal to 86400"}},
		{desc: "record with unknown type", mutate: func(z *v1.BindZone) { z.Spec.Records[0].Type = "SPF" },
			wantErrors: []string{"spec.records[0].type", `Unsupported value: "SPF"`}},
		{desc: "record without values", mutate: func(z *v1.BindZone) { z.Spec.Records[0].Values = nil },
			wantErrors: []string{"spec.records[0].values", "Required value"}},
		{desc: "record name with a space", mutate: func(z *v1.BindZone) { z.Spec.Records[0].Name = "w w" },
			wantErrors: []string{"spec.records[0].name", "should match"}},
		{desc: "record TTL above 2^31-1", mutate: func(z *v1.BindZone) {
			z.Spec.Records[0].TTL = ptr.To[v1.TTL](-1)
		}, wantErrors: []string{"spec.records[0].ttl", "should be greater than or equal to 0"}},
		{desc: "CNAME with two targets", mutate: func(z *v1.BindZone) {
			z.Spec.Records[0] = v1.RecordSet{Name: "alias", Type: "CNAME", Values: []string{"a.example.com.", "b.example.com."}}
		}, wantErrors: []string{"a CNAME record set holds exactly one value"}},
		{desc: "CNAME at the apex", mutate: func(z *v1.BindZone) {
			z.Spec.Records[0] = v1.RecordSet{Name: "@", Type: "CNAME", Values: []string{"a.example.net."}}
		}, wantErrors: []string{"a CNAME cannot be placed at the zone apex"}},
		{desc: "DNAME with two targets", mutate: func(z *v1.BindZone) {
			z.Spec.Records[0] = v1.RecordSet{Name: "old", Type: "DNAME", Values: []string{"a.example.com.", "b.example.com."}}
		}, wantErrors: []string{"a DNAME record set holds exactly one value"}},
		{desc: "duplicate record set", mutate: func(z *v1.BindZone) {
			z.Spec.Records = append(z.Spec.Records, v1.RecordSet{Name: "www", Type: "A", Values: []string{"192.0.2.2"}})
		}, wantErrors: []string{"spec.records[1]", "Duplicate value"}},
		{desc: "forwarder is a host name", mutate: func(z *v1.BindZone) {
			forwardZone(z)
			z.Spec.Forwarders[0].Address = "resolver.example.net"
		}, wantErrors: []string{"spec.forwarders[0].address", "forwarder address must be an IPv4 or IPv6 address"}},
		// Rules that were the validating webhook's until they moved here.
		{desc: "valid name of 253 characters", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = longName(253) }},
		{desc: "valid name of 254 characters with the dot", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = longName(253) + "." }},
		{desc: "name longer than 253 characters", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = longName(254) },
			wantErrors: []string{"spec.zoneName", "a domain name has at most 253 characters (254 with the trailing dot)"}},
		{desc: "root zone as a primary", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = "."; z.Spec.Records = nil },
			wantErrors: []string{"spec.zoneName", `the root zone cannot be a Primary zone here; use a Forward zone for "."`}},
		{desc: "valid SOA timers", mutate: func(z *v1.BindZone) {
			z.Spec.SOA = &v1.SOASpec{Refresh: ptr.To[int32](600), Retry: ptr.To[int32](600), Expire: ptr.To[int32](600)}
		}},
		{desc: "SOA retry above refresh", mutate: func(z *v1.BindZone) { z.Spec.SOA = &v1.SOASpec{Refresh: ptr.To[int32](60), Retry: ptr.To[int32](600)} },
			wantErrors: []string{"spec.soa.retry", "retry must not exceed refresh (60); a retry is a faster refresh after a failure"}},
		{desc: "SOA expire below refresh", mutate: func(z *v1.BindZone) { z.Spec.SOA = &v1.SOASpec{Refresh: ptr.To[int32](600), Expire: ptr.To[int32](60)} },
			wantErrors: []string{"spec.soa.expire", "expire must be at least refresh (600), or secondaries drop the zone"}},
		{desc: "SOA MNAME longer than 253 characters", mutate: func(z *v1.BindZone) { z.Spec.SOA = &v1.SOASpec{PrimaryNameServer: longName(254)} },
			wantErrors: []string{"spec.soa.primaryNameServer", "a domain name has at most 253 characters"}},
		{desc: "valid DS at a delegation", mutate: func(z *v1.BindZone) {
			z.Spec.Records[0] = v1.RecordSet{Name: "sub", Type: "DS", Values: []string{"12345 13 2 AB"}}
		}},
		{desc: "DS at the apex", mutate: func(z *v1.BindZone) {
			z.Spec.Records[0] = v1.RecordSet{Name: "@", Type: "DS", Values: []string{"12345 13 2 AB"}}
		}, wantErrors: []string{"spec.records[0].type", "DS records for the zone itself belong in the parent zone"}},
	})
}

// longName is a domain name of n characters (n > 2), in labels of 63 or
// fewer, without the trailing dot.
func longName(n int) v1.DomainName {
	var b []byte
	for len(b) < n {
		if len(b) > 0 {
			b = append(b, '.')
		}
		l := min(63, n-len(b))
		if rest := n - len(b) - l; rest == 1 {
			l-- // leave room for one more label, not a trailing dot
		}
		for range l {
			b = append(b, 'a')
		}
	}
	return v1.DomainName(b)
}

// seededZone is a zone loaded from a zone file in ConfigMaps.
func seededZone() *v1.BindZone {
	z := baseZone()
	z.Spec.SeedFrom = &v1.ZoneSeed{
		ConfigMaps: []v1.LocalObjectReference{{Name: "big-seed-0"}, {Name: "big-seed-1"}},
		SHA256:     strings.Repeat("ab", 32),
	}
	return z
}

func TestBindZoneSeedFrom(t *testing.T) {
	runCreateCases(t, seededZone, []createCase[*v1.BindZone]{
		{desc: "valid seeded primary"},
		{desc: "seed on a secondary zone", mutate: secondaryZone,
			wantErrors: []string{"spec.seedFrom", "seedFrom only applies to Primary zones"}},
		{desc: "seed without ConfigMaps", mutate: func(z *v1.BindZone) { z.Spec.SeedFrom.ConfigMaps = nil },
			wantErrors: []string{"spec.seedFrom.configMaps"}},
		{desc: "a ConfigMap named twice", mutate: func(z *v1.BindZone) { z.Spec.SeedFrom.ConfigMaps[1].Name = "big-seed-0" },
			wantErrors: []string{"spec.seedFrom.configMaps", "each ConfigMap may be named once"}},
		{desc: "seventeen parts", mutate: func(z *v1.BindZone) {
			z.Spec.SeedFrom.ConfigMaps = nil
			for i := range 17 {
				z.Spec.SeedFrom.ConfigMaps = append(z.Spec.SeedFrom.ConfigMaps, v1.LocalObjectReference{Name: fmt.Sprintf("part-%d", i)})
			}
		}, wantErrors: []string{"spec.seedFrom.configMaps", "must have at most 16 items"}},
		{desc: "uppercase digest", mutate: func(z *v1.BindZone) { z.Spec.SeedFrom.SHA256 = strings.Repeat("AB", 32) },
			wantErrors: []string{"spec.seedFrom.sha256", "should match"}},
		{desc: "short digest", mutate: func(z *v1.BindZone) { z.Spec.SeedFrom.SHA256 = "abcd" },
			wantErrors: []string{"spec.seedFrom.sha256", "should match"}},
	})
	runUpdateCases(t, seededZone, []updateCase[*v1.BindZone]{
		{desc: "records may change beside a seed", mutate: func(z *v1.BindZone) { z.Spec.Records[0].Values = []string{"192.0.2.9"} }},
		{desc: "the seed is immutable", mutate: func(z *v1.BindZone) { z.Spec.SeedFrom.SHA256 = strings.Repeat("cd", 32) },
			wantErrors: []string{"spec.seedFrom", "seedFrom is immutable; create a new BindZone"}},
		{desc: "the seed cannot be removed", mutate: func(z *v1.BindZone) { z.Spec.SeedFrom = nil },
			wantErrors: []string{"spec.seedFrom", "seedFrom can only be set when the zone is created"}},
	})
	runUpdateCases(t, baseZone, []updateCase[*v1.BindZone]{
		{desc: "a seed cannot be added", mutate: func(z *v1.BindZone) { z.Spec.SeedFrom = seededZone().Spec.SeedFrom },
			wantErrors: []string{"spec.seedFrom", "seedFrom can only be set when the zone is created"}},
	})
}

func TestBindZoneExternalSecondaries(t *testing.T) {
	hidden := func(z *v1.BindZone) {
		z.Spec.ExternalSecondaries = []v1.RemoteServer{{Address: "198.18.0.9", Port: ptr.To[int32](5353), KeyRef: &v1.LocalObjectReference{Name: "xfer"}}}
	}
	runCreateCases(t, baseZone, []createCase[*v1.BindZone]{
		{desc: "a hidden primary", mutate: hidden},
		{desc: "external secondaries of a secondary zone", mutate: func(z *v1.BindZone) { secondaryZone(z); hidden(z) },
			wantErrors: []string{"spec.externalSecondaries", "externalSecondaries only apply to Primary zones"}},
		{desc: "a host name", mutate: func(z *v1.BindZone) { hidden(z); z.Spec.ExternalSecondaries[0].Address = "ns2.example.net" },
			wantErrors: []string{"spec.externalSecondaries[0].address", "not a host name"}},
		{desc: "port zero", mutate: func(z *v1.BindZone) { hidden(z); z.Spec.ExternalSecondaries[0].Port = ptr.To[int32](0) },
			wantErrors: []string{"spec.externalSecondaries[0].port"}},
		{desc: "seventeen", mutate: func(z *v1.BindZone) {
			for i := range 17 {
				z.Spec.ExternalSecondaries = append(z.Spec.ExternalSecondaries, v1.RemoteServer{Address: fmt.Sprintf("198.18.0.%d", i+1)})
			}
		}, wantErrors: []string{"spec.externalSecondaries", "must have at most 16 items"}},
	})
}

func TestBindZoneUpdate(t *testing.T) {
	runUpdateCases(t, baseZone, []updateCase[*v1.BindZone]{
		{desc: "records may change", mutate: func(z *v1.BindZone) { z.Spec.Records[0].Values = []string{"192.0.2.9"} }},
		{desc: "zoneName is immutable", mutate: func(z *v1.BindZone) { z.Spec.ZoneName = "example.org" },
			wantErrors: []string{"spec.zoneName", "zoneName is immutable; create a new BindZone"}},
		{desc: "clusterRef is immutable", mutate: func(z *v1.BindZone) { z.Spec.ClusterRef.Name = "other" },
			wantErrors: []string{"spec.clusterRef", "clusterRef is immutable; create a new BindZone"}},
		{desc: "type is immutable", mutate: func(z *v1.BindZone) { forwardZone(z) },
			wantErrors: []string{"spec.type", "type is immutable"}},
	})
}
