package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// Forwardee is a BindCluster that a forwarder names (clusterRef): where its
// query Service answers, and what it serves, so a validating resolver can
// trust that data without a public chain of trust.
type Forwardee struct {
	// Address is the query Service's ClusterIP: stable for the Service's
	// life, so it may appear in restart-scoped config (never a pod IP).
	Address string
	// Zones maps each zone the cluster serves (canonical name, no trailing
	// dot) to its DS records in presentation format ("<key tag>
	// <algorithm> <digest type> <digest>"); empty when the zone is unsigned
	// or its keys are not published yet.
	Zones map[string][]string
}

// forwarders renders a forwarders list: literal addresses with their
// port, and BindClusters at their query Service on port 53.
func (m *model) forwarders(what string, fw []bindv1alpha1.Forwarder) ([]string, error) {
	out := make([]string, 0, len(fw))
	for i, f := range fw {
		at := func() string { return what + "[" + strconv.Itoa(i) + "]" } // only for an error (subject.go)
		if f.ClusterRef != nil {
			t, ok := m.in.Forwardees[f.ClusterRef.Name]
			if !ok || t.Address == "" {
				return nil, fmt.Errorf("%s names BindCluster %q, which does not exist or has no query Service address yet", at(), f.ClusterRef.Name)
			}
			a, err := namedOnError(func() string { return fmt.Sprintf("%s BindCluster %q query Service address", at(), f.ClusterRef.Name) },
				func(what string) (string, error) { return checkIP(what, t.Address) })
			if err != nil {
				return nil, err
			}
			out = append(out, a)
			continue
		}
		a, err := namedOnError(func() string { return at() + " address" },
			func(what string) (string, error) { return checkIP(what, f.Address) })
		if err != nil {
			return nil, err
		}
		if f.Port != nil && *f.Port != 53 {
			a = fmt.Sprintf("%s port %d", a, *f.Port)
		}
		out = append(out, a)
	}
	return out, nil
}

// trustAnchor is a zone and the DS records a validating resolver trusts it
// by.
type trustAnchor struct {
	zone string
	ds   [][4]string // key tag, algorithm, digest type, digest
}

// forwardedTrust decides, for every Forward zone whose forwarders all name
// BindClusters, how a validating resolver treats the answers: the first
// cluster's DS records for the zone are a trust anchor; without any (the
// zone is unsigned, its keys are not published yet, or that cluster does
// not serve it as a BindZone) the zone is excepted from validation, since
// the public chain from the root cannot vouch for internal data (it either
// does not reach the name or, for a name that also exists publicly, proves
// different keys). Sorted by zone name.
func (m *model) forwardedTrust() (except []string, anchors []trustAnchor, err error) {
	seen := map[string]bool{}
	for _, v := range append([]*viewDef{m.global}, m.views...) {
		for _, z := range v.zones {
			if z.Spec.Type != bindv1alpha1.ZoneForward || len(z.Spec.Forwarders) == 0 {
				continue
			}
			allClusters := true
			for _, f := range z.Spec.Forwarders {
				allClusters = allClusters && f.ClusterRef != nil
			}
			name := records.CanonicalZone(string(z.Spec.ZoneName))
			if !allClusters || seen[name] {
				continue
			}
			seen[name] = true
			ds := m.in.Forwardees[z.Spec.Forwarders[0].ClusterRef.Name].Zones[name]
			if len(ds) == 0 {
				except = append(except, name)
				continue
			}
			a := trustAnchor{zone: name}
			for _, d := range ds {
				f, err := parseDS(d)
				if err != nil {
					return nil, nil, fmt.Errorf("BindZone %s: the DS record %q of zone %s on BindCluster %q: %w", z.Name, d, name, z.Spec.Forwarders[0].ClusterRef.Name, err)
				}
				a.ds = append(a.ds, f)
			}
			anchors = append(anchors, a)
		}
	}
	slices.Sort(except)
	slices.SortFunc(anchors, func(a, b trustAnchor) int { return strings.Compare(a.zone, b.zone) })
	return except, anchors, nil
}

// parseDS reads "<key tag> <algorithm> <digest type> <hex digest>" and
// checks each field, since the text comes from an object's status.
func parseDS(s string) ([4]string, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return [4]string{}, fmt.Errorf("want 4 fields (key tag, algorithm, digest type, digest), got %d", len(f))
	}
	for i, max := range []uint64{65535, 255, 255} {
		if _, err := strconv.ParseUint(f[i], 10, 0); err != nil || len(f[i]) > 5 {
			return [4]string{}, fmt.Errorf("field %d %q is not a number", i+1, f[i])
		} else if n, _ := strconv.ParseUint(f[i], 10, 0); n > max {
			return [4]string{}, fmt.Errorf("field %d %d is above %d", i+1, n, max)
		}
	}
	if len(f[3]) < 2 || len(f[3]) > 128 || strings.Trim(strings.ToUpper(f[3]), "0123456789ABCDEF") != "" {
		return [4]string{}, fmt.Errorf("digest %q is not hexadecimal", f[3])
	}
	return [4]string{f[0], f[1], f[2], strings.ToUpper(f[3])}, nil
}

// validatesDNSSEC reports whether the cluster's resolver validates.
func (m *model) validatesDNSSEC() bool {
	s := m.cluster.Spec
	return s.Mode == bindv1alpha1.ModeResolver && (s.Recursion == nil || s.Recursion.DNSSECValidation != bindv1alpha1.DNSSECValidationNo)
}

// writeValidateExcept goes inside options: the forwarded zones a
// validating resolver does not validate.
func writeValidateExcept(c *conf, m *model, except []string) {
	if !m.validatesDNSSEC() || len(except) == 0 {
		return
	}
	q := make([]string, len(except))
	for i, z := range except {
		q[i] = c.q("zone name", z)
	}
	c.list("validate-except", q)
}

// writeTrustAnchors goes at top level: the forwarded zones' DS records.
func writeTrustAnchors(c *conf, m *model, anchors []trustAnchor) {
	if !m.validatesDNSSEC() || len(anchors) == 0 {
		return
	}
	c.blank()
	c.comment("Forward zones naming a BindCluster: that cluster's signed copy is trusted by its DS records.")
	c.open("trust-anchors {")
	for _, a := range anchors {
		for _, d := range a.ds {
			c.line("%s static-ds %s %s %s %s;", c.q("zone name", a.zone), d[0], d[1], d[2], c.q("DS digest", d[3]))
		}
	}
	c.close()
}
