package render

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// writeConfigZone declares a Forward, Stub or Secondary zone. These hold no
// data the operator manages, so they live in named.conf on every pod alike
// (each pod transfers from the external primaries itself).
func writeConfigZone(c *conf, m *model, v *viewDef, z *bindv1alpha1.BindZone) {
	name := string(z.Spec.ZoneName)
	c.blank()
	c.words("zone \"", c.name("zone name", name), "\" {")
	c.depth++
	// The lists are checked before the file line's path: that path is
	// built from the zone and view names loadZones and loadViews checked
	// already, so its check cannot be the first to fail.
	l, err := namedOnError(func() string { return "BindZone " + z.Name },
		func(what string) (configZoneLists, error) { return m.configZoneLists(what, z) })
	c.fail(err)
	switch z.Spec.Type {
	case bindv1alpha1.ZoneForward:
		c.line("type forward;")
		// A Forward zone defaults to only: the user asked for these servers.
		c.line("forward %s;", forwardPolicy(z.Spec.ForwardPolicy, bindv1alpha1.ForwardOnly))
		c.list("forwarders", l.forwarders)
	case bindv1alpha1.ZoneStub, bindv1alpha1.ZoneSecondary:
		if z.Spec.Type == bindv1alpha1.ZoneStub {
			c.line("type stub;")
		} else {
			c.line("type secondary;")
		}
		c.words("file \"", c.name("path", m.paths.SecondaryZoneFile(v.name, name)), "\";")
		c.list("primaries", l.primaries)
		if len(l.allowTransfer) > 0 {
			c.list("allow-transfer", l.allowTransfer)
		}
	}
	if len(l.allowQuery) > 0 {
		c.list("allow-query", l.allowQuery)
	}
	c.close()
}

// configZoneLists are the checked lists of a config zone's clause.
type configZoneLists struct {
	forwarders, primaries, allowTransfer, allowQuery []string
}

// configZoneLists checks the lists of a Forward, Stub or Secondary zone
// (what, its subject, words an error: subject.go) and renders them.
func (m *model) configZoneLists(what string, z *bindv1alpha1.BindZone) (configZoneLists, error) {
	var l configZoneLists
	var err error
	switch z.Spec.Type {
	case bindv1alpha1.ZoneForward:
		if l.forwarders, err = m.forwarders(what+" spec.forwarders", z.Spec.Forwarders); err != nil {
			return l, err
		}
		if len(l.forwarders) == 0 {
			return l, fmt.Errorf("%s is a Forward zone without forwarders; add at least one", what)
		}
	case bindv1alpha1.ZoneStub, bindv1alpha1.ZoneSecondary:
		if len(z.Spec.Primaries) == 0 {
			return l, fmt.Errorf("%s is a %s zone without primaries; add at least one", what, z.Spec.Type)
		}
		l.primaries = make([]string, 0, len(z.Spec.Primaries))
		for i, p := range z.Spec.Primaries {
			s, err := namedOnError(func() string { return what + " spec.primaries[" + strconv.Itoa(i) + "]" },
				func(what string) (string, error) { return m.remoteServer(what, p) })
			if err != nil {
				return l, err
			}
			l.primaries = append(l.primaries, s)
		}
		if l.allowTransfer, err = m.matchList(what+" spec.allowTransfer", z.Spec.AllowTransfer); err != nil {
			return l, err
		}
	}
	if l.allowQuery, err = m.matchList(what+" spec.allowQuery", z.Spec.AllowQuery); err != nil {
		return l, err
	}
	return l, nil
}

// ZoneRole says which side of the cluster a runtime zone clause is for.
type ZoneRole int

const (
	// ZoneRolePrimary is the clause the primary pod adds.
	ZoneRolePrimary ZoneRole = iota
	// ZoneRoleSecondary is the clause a secondary pod adds for a primary
	// zone that is not in a catalog (catalog members provision themselves).
	ZoneRoleSecondary
)

// ZoneClauses builds the runtime clauses of primary zones, for
// `rndc addzone <zone> in <view> '<clause>'` (and modzone). Build it once per
// reconcile with NewZoneClauses: it validates the Input the same way Render
// does, so a clause never names a key or policy missing from named.conf.
type ZoneClauses struct{ m *model }

// NewZoneClauses validates in and returns a clause builder.
func NewZoneClauses(in Input) (*ZoneClauses, error) {
	if in.Cluster == nil {
		return nil, fmt.Errorf("render: no BindCluster given")
	}
	if in.Paths == (Paths{}) {
		in.Paths = DefaultPaths()
	}
	m, err := newModel(in)
	if err != nil {
		return nil, fmt.Errorf("BindCluster %s: %w", in.Cluster.Name, err)
	}
	return &ZoneClauses{m: m}, nil
}

// ZoneClause is a convenience for a single clause; see ZoneClauses.Clause.
func ZoneClause(in Input, zone *bindv1alpha1.BindZone, r ZoneRole, alsoNotify []string) (string, error) {
	zc, err := NewZoneClauses(in)
	if err != nil {
		return "", err
	}
	return zc.Clause(zone, r, alsoNotify)
}

// TransferKey is the BIND name of the key that signs the zone's transfers
// and NOTIFYs between the cluster's pods: the key of the zone's view, else
// spec.transferKeyRef of the cluster, else the key of the zone's catalog,
// else the key of the cluster's only catalog. "" when there is none.
func (zc *ZoneClauses) TransferKey(zone *bindv1alpha1.BindZone) string {
	m := zc.m
	if ref := zone.Spec.ViewRef; ref != nil {
		if v := m.view(ref.Name); v != nil {
			return v.key
		}
	}
	if m.transferKey != "" {
		return m.transferKey
	}
	if ref := zone.Spec.CatalogZoneRef; ref != nil {
		for _, c := range m.catalogs {
			if c.obj.Name == ref.Name {
				return c.key
			}
		}
	}
	if len(m.catalogs) == 1 {
		return m.catalogs[0].key
	}
	return ""
}

// Clause renders the `{ ... };` clause of a Primary zone for r.
//
// alsoNotify lists the secondaries' pod IPs (primary role only), each an
// IP (NOTIFY goes to the cluster's DNS port) or an IP and port ("ip:port",
// "[v6]:port") when a secondary listens elsewhere. They are
// runtime data by nature: this clause goes to rndc, never into named.conf,
// so pod IPs here cannot cause a roll.
func (zc *ZoneClauses) Clause(zone *bindv1alpha1.BindZone, r ZoneRole, alsoNotify []string) (string, error) {
	m := zc.m
	what := "BindZone " + zone.Name
	if !zone.Spec.IsPrimary() {
		return "", fmt.Errorf("%s is a %s zone, which lives in named.conf, not in a runtime clause", what, zone.Spec.Type)
	}
	name := string(zone.Spec.ZoneName)
	v, err := m.placement(what, zone.Spec.ViewRef)
	if err != nil {
		return "", err
	}
	key := zc.TransferKey(zone)
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }

	switch r {
	case ZoneRolePrimary:
		add("type primary;")
		add("file %q;", m.paths.PrimaryZoneFile(v.name, name))
		updates, err := m.updateRule(what, zone, v.key, key)
		if err != nil {
			return "", err
		}
		if updates != "" {
			add("%s", updates)
		}
		var xfr []string
		if key != "" {
			xfr = append(xfr, `key "`+key+`"`)
		}
		if k, ok, err := m.updateKeyTransfer(what, zone); err != nil {
			return "", err
		} else if ok {
			xfr = append(xfr, `key "`+k+`"`)
		}
		user, err := m.matchList(what+" spec.allowTransfer", zone.Spec.AllowTransfer)
		if err != nil {
			return "", err
		}
		xfr = append(xfr, user...)
		// An external secondary transfers with its key when it has one
		// (then only with it), else from its address; once each, as two
		// may share a key. (What the zone already allows stays as it was
		// rendered before.)
		var external []string
		for i, es := range zone.Spec.ExternalSecondaries {
			at := fmt.Sprintf("%s spec.externalSecondaries[%d]", what, i)
			srv, err := m.remoteServer(at, es)
			if err != nil {
				return "", err
			}
			external = append(external, srv)
			var grant string
			if es.KeyRef != nil {
				k, _ := m.keyRef(at, es.KeyRef.Name) // remoteServer checked it
				grant = `key "` + k + `"`
			} else {
				grant, _ = checkIP(at+" address", es.Address) // as did remoteServer
			}
			if !slices.Contains(xfr, grant) {
				xfr = append(xfr, grant)
			}
		}
		add("allow-transfer { %s; };", joinOrNone(xfr))
		if len(alsoNotify)+len(external) > 0 {
			ips := make([]string, 0, len(alsoNotify)+len(external))
			for _, ip := range alsoNotify {
				a, err := m.notifyTarget(what+" also-notify address", ip)
				if err != nil {
					return "", err
				}
				if key != "" {
					a += ` key "` + key + `"`
				}
				ips = append(ips, a)
			}
			ips = append(ips, external...)
			slices.Sort(ips)
			ips = slices.Compact(ips)
			add("also-notify { %s; };", strings.Join(ips, "; "))
		}
		if ref := zone.Spec.DNSSECPolicyRef; ref != nil {
			add("dnssec-policy %q;", ref.Name)
			// 9.18 signs a zone without allow-update only inline; a
			// dynamic zone is signed in place. Say so explicitly: the
			// default flips to yes in 9.20 and named-checkconf warns.
			if updates == "" {
				add("inline-signing yes;")
			} else {
				add("inline-signing no;")
			}
		}
	case ZoneRoleSecondary:
		if zone.Spec.CatalogZoneRef != nil {
			return "", fmt.Errorf("%s is in BindCatalogZone %s: the secondaries provision it from the catalog, not from a runtime clause", what, zone.Spec.CatalogZoneRef.Name)
		}
		if m.primary == "" {
			return "", fmt.Errorf("%s: the primary Service has no ClusterIP yet, so secondaries have nowhere to transfer from", what)
		}
		add("type secondary;")
		add("file %q;", m.paths.SecondaryZoneFile(v.name, name))
		add("primaries { %s; };", m.primaryServer(key))
		// Clients that transfer the zone through the query Service reach
		// any pod: a secondary allows whom the primary allows, besides the
		// cluster's own transfer key.
		var xfr []string
		if k, ok, err := m.updateKeyTransfer(what, zone); err != nil {
			return "", err
		} else if ok {
			xfr = append(xfr, `key "`+k+`"`)
		}
		user, err := m.matchList(what+" spec.allowTransfer", zone.Spec.AllowTransfer)
		if err != nil {
			return "", err
		}
		if xfr = append(xfr, user...); len(xfr) > 0 {
			add("allow-transfer { %s; };", strings.Join(xfr, "; "))
		}
	default:
		return "", fmt.Errorf("unknown zone role %d", r)
	}
	if len(zone.Spec.AllowQuery) > 0 {
		els, err := m.matchList(what+" spec.allowQuery", zone.Spec.AllowQuery)
		if err != nil {
			return "", err
		}
		add("allow-query { %s; };", strings.Join(els, "; "))
	}
	return "{ " + strings.Join(parts, " ") + " };", nil
}

// updateRule is the statement that says who may update a Primary zone,
// "" when nobody may. viewKey is the key of the zone's view, xfrKey the
// cluster's transfer key K (TransferKey).
//
// The operator signs its own UPDATEs with the view's key, else with K. A
// zone with an update key (spec.updateKeyRef) that differs from that key
// gets an update-policy: the operator's key may change anything, and every
// other signer is judged by the agent over OwnersSocket ("external"): it
// grants the update key's UPDATEs except on the record sets the operator
// owns (DNSRecords, inline records, SOA, NS), so an external client such
// as external-dns or nsupdate gets REFUSED there instead of silently
// overwriting them (docs/behaviours.md, "Owned record sets"). Without K,
// outside views, the operator signs with the update key itself and the
// zone keeps a plain allow-update.
func (m *model) updateRule(what string, zone *bindv1alpha1.BindZone, viewKey, xfrKey string) (string, error) {
	updKey := ""
	if ref := zone.Spec.UpdateKeyRef; ref != nil {
		k, err := m.keyRef(what+" spec.updateKeyRef", ref.Name)
		if err != nil {
			return "", err
		}
		updKey = k
	}
	opKey, guarded := OperatorUpdateKey(viewKey, xfrKey, updKey)
	switch {
	case guarded:
		// BIND requires a name in an external rule and ignores it: the
		// agent finds the zone from the record's name and the signer.
		// Quoted as `rndc showzone` prints the rule, so the agent finds
		// the clause unchanged and makes no modzone.
		return fmt.Sprintf(`update-policy { grant "%s" zonesub "ANY"; grant "local:%s" external "%s" "ANY"; };`,
			opKey, OwnersSocketName, records.ZoneFQDN(string(zone.Spec.ZoneName))), nil
	case opKey != "":
		return `allow-update { key "` + opKey + `"; };`, nil
	}
	return "", nil
}

// OperatorUpdateKey is the one place that says, from the BIND names of a
// Primary zone's keys, which key signs the operator's own UPDATEs and
// whether the zone's update key is guarded (its UPDATEs judged by the
// agent, so they cannot touch the sets the operator owns): the view's key,
// else the transfer key K when the zone has an update key, else the update
// key itself, which is then not guarded since nothing tells the operator's
// UPDATEs from a client's. "" when no key may update the zone.
func OperatorUpdateKey(viewKey, transferKey, updateKey string) (operatorKey string, guarded bool) {
	operatorKey = viewKey
	if operatorKey == "" && updateKey != "" {
		operatorKey = transferKey
	}
	if operatorKey == "" {
		operatorKey = updateKey
	}
	return operatorKey, updateKey != "" && operatorKey != updateKey
}

// updateKeyTransfer is the BIND name of the zone's update key when the
// zone lets it transfer (spec.allowUpdateKeyTransfer).
func (m *model) updateKeyTransfer(what string, zone *bindv1alpha1.BindZone) (string, bool, error) {
	ref := zone.Spec.UpdateKeyRef
	if !zone.Spec.AllowUpdateKeyTransfer || ref == nil {
		return "", false, nil
	}
	k, err := m.keyRef(what+" spec.updateKeyRef", ref.Name)
	return k, err == nil, err
}

// notifyTarget renders one also-notify element: "ip" or "ip port N". A
// bare IP gets the cluster's DNS port when that is not 53: the pods listen
// there, and NOTIFYs go straight to the pods.
func (m *model) notifyTarget(what, s string) (string, error) {
	port := m.dnsPort
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return "", fmt.Errorf("%s %q has port 0", what, s)
		}
		s, port = ap.Addr().String(), int32(ap.Port())
	}
	a, err := checkIP(what, s)
	if err != nil {
		return "", err
	}
	if port != 53 {
		a += " port " + strconv.Itoa(int(port))
	}
	return a, nil
}
