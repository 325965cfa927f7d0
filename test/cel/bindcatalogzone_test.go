package cel

import (
	"testing"

	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func baseCatalog() *v1.BindCatalogZone {
	return &v1.BindCatalogZone{Spec: v1.BindCatalogZoneSpec{
		ClusterRef:     v1.LocalObjectReference{Name: "authoritative"},
		ZoneName:       "catalog.example.internal",
		TransferKeyRef: v1.LocalObjectReference{Name: "transfer"},
	}}
}

func TestBindCatalogZoneCreate(t *testing.T) {
	runCreateCases(t, baseCatalog, []createCase[*v1.BindCatalogZone]{
		{desc: "valid"},
		{desc: "valid default primaries", mutate: func(c *v1.BindCatalogZone) {
			c.Spec.DefaultPrimaries = []v1.RemoteServer{{Address: "2001:db8::53", Port: ptr.To[int32](5353), KeyRef: &v1.LocalObjectReference{Name: "transfer"}}}
		}},
		{desc: "no transfer key", mutate: func(c *v1.BindCatalogZone) { c.Spec.TransferKeyRef.Name = "" },
			wantErrors: []string{"spec.transferKeyRef.name"}},
		{desc: "root as catalog", mutate: func(c *v1.BindCatalogZone) { c.Spec.ZoneName = "." },
			wantErrors: []string{"the root zone cannot be a catalog zone"}},
		{desc: "default primary is a host name", mutate: func(c *v1.BindCatalogZone) {
			c.Spec.DefaultPrimaries = []v1.RemoteServer{{Address: "primary.example.internal"}}
		}, wantErrors: []string{"spec.defaultPrimaries[0].address", "address must be an IPv4 or IPv6 address"}},
		{desc: "too many default primaries", mutate: func(c *v1.BindCatalogZone) {
			for range 9 {
				c.Spec.DefaultPrimaries = append(c.Spec.DefaultPrimaries, v1.RemoteServer{Address: "192.0.2.1"})
			}
		}, wantErrors: []string{"spec.defaultPrimaries", "must have at most 8 items"}},
	})
}

func TestBindCatalogZoneUpdate(t *testing.T) {
	runUpdateCases(t, baseCatalog, []updateCase[*v1.BindCatalogZone]{
		{desc: "transfer key may change", mutate: func(c *v1.BindCatalogZone) { c.Spec.TransferKeyRef.Name = "transfer2" }},
		{desc: "zoneName is immutable", mutate: func(c *v1.BindCatalogZone) { c.Spec.ZoneName = "catalog2.example.internal" },
			wantErrors: []string{"spec.zoneName", "zoneName is immutable; create a new BindCatalogZone"}},
		{desc: "clusterRef is immutable", mutate: func(c *v1.BindCatalogZone) { c.Spec.ClusterRef.Name = "other" },
			wantErrors: []string{"spec.clusterRef", "clusterRef is immutable; create a new BindCatalogZone"}},
	})
}
