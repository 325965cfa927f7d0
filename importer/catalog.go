package importer

import (
	"slices"
	"strings"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Catalog zones (RFC 9432) a server produces become BindCatalogZones: a
// primary zone whose data is a catalog (a "version" TXT and member PTRs
// under "zones") is not served as a zone of its own but made by the
// operator from its members, each member BindZone naming it
// (catalogZoneRef). The catalog's secondaries outside the cluster
// transfer it with a key, so the catalog's allow-transfer must name one.

// catalogConsumerWhy is the report of a catalog-zones statement: this
// server provisions zones from a catalog another server publishes.
const catalogConsumerWhy = "a catalog this server consumes from another has no counterpart: a BindCatalogZone publishes the cluster's own zones; add each member the catalog lists as a Secondary BindZone"

// catalogs turns the emitted Primary BindZones that hold a catalog into
// BindCatalogZones, and points their members at them.
func (c *converter) catalogs() {
	byZone := map[string][]*v1.BindZone{}
	for _, o := range c.res.Objects {
		if z, ok := o.(*v1.BindZone); ok && z.Spec.ViewRef == nil {
			n := dns.CanonicalName(string(z.Spec.ZoneName))
			byZone[n] = append(byZone[n], z)
		}
	}
	var drop []client.Object
	for _, o := range c.res.Objects {
		z, ok := o.(*v1.BindZone)
		if !ok || z.Spec.Type != v1.ZonePrimary {
			continue
		}
		members, version := catalogData(z)
		if version == "" {
			continue
		}
		drop = append(drop, z)
		what := "zone " + string(z.Spec.ZoneName) + " (catalog)"
		pos := c.zonePos[z]
		if z.Spec.ViewRef != nil {
			c.res.Report.omit(pos, what, "a catalog in a view: the operator's catalogs do not serve clusters with views yet")
			continue
		}
		key := ""
		if l := z.Spec.AllowTransfer; len(l) == 1 && l[0].KeyRef != "" && !l[0].Negate {
			key = l[0].KeyRef
		}
		if key == "" {
			c.res.Report.omit(pos, what, "a BindCatalogZone's secondaries transfer it with a key (transferKeyRef), and its allow-transfer names no single key: allow-transfer { key K; } on the server first")
			continue
		}
		cat := &v1.BindCatalogZone{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BindCatalogZone"},
			ObjectMeta: c.meta("BindCatalogZone", string(z.Spec.ZoneName)),
			Spec: v1.BindCatalogZoneSpec{
				ClusterRef:     v1.LocalObjectReference{Name: c.opts.Cluster},
				ZoneName:       z.Spec.ZoneName,
				TransferKeyRef: v1.LocalObjectReference{Name: key},
			},
		}
		c.res.Objects = append(c.res.Objects, cat)
		for _, m := range members {
			zs := byZone[dns.CanonicalName(m)]
			i := slices.IndexFunc(zs, func(z *v1.BindZone) bool { return z.Spec.Type == v1.ZonePrimary })
			if i < 0 {
				c.res.Report.omit(pos, what+": member "+m, "it is not a primary zone this import emits; the operator's catalogs list the cluster's own primary zones")
				continue
			}
			zs[i].Spec.CatalogZoneRef = &v1.LocalObjectReference{Name: cat.Name}
		}
	}
	c.res.Objects = slices.DeleteFunc(c.res.Objects, func(o client.Object) bool { return slices.Contains(drop, o) })
}

// catalogData is a catalog's member zones and its schema version, ""
// when z does not hold a catalog. Properties other than members (group,
// coo) are the operator's to set, and not read.
func catalogData(z *v1.BindZone) (members []string, version string) {
	for _, s := range z.Spec.Records {
		name := strings.ToLower(string(s.Name))
		switch {
		case name == "version" && s.Type == "TXT" && len(s.Values) == 1:
			version = strings.Trim(s.Values[0], `"`)
		case s.Type == "PTR" && strings.HasSuffix(name, ".zones") && strings.Count(name, ".") == 1:
			for _, v := range s.Values {
				members = append(members, strings.TrimSuffix(v, "."))
			}
		}
	}
	if version != "1" && version != "2" {
		return nil, ""
	}
	slices.Sort(members)
	return members, version
}
