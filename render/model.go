package render

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// model is Input after validation, with every list sorted. The writers in
// options.go, views.go, zones.go ... only ever walk a model, so the order of
// Input's slices cannot reach the output.
type model struct {
	in       Input
	paths    Paths
	cluster  *bindv1alpha1.BindCluster
	dnsPort  int32
	primary  string // PrimaryAddress, canonical; "" when unknown
	primPort int32

	keys     []TSIGKey         // sorted by BIND name, deduplicated
	viewKeys []TSIGKey         // the views' keys, in view order
	keyByObj map[string]string // BindTSIGKey object name -> BIND key name

	acls       []aclDef
	aclNames   map[string]bool
	views      []*viewDef // sorted by (order, name); empty without views
	viewByName map[string]*viewDef

	// Outside views, zones and policies hang off the top level.
	global *viewDef

	catalogs       []catalogDef
	notifyKeys     []string // BIND key names the secondaries accept NOTIFYs signed with
	forwardKeys    []string // BIND key names of Primary zones' update keys: the secondaries forward UPDATEs signed with them
	transferKey    string   // BIND name of spec.transferKeyRef, "" without one
	dnssecPolicies []*bindv1alpha1.BindDNSSECPolicy
	policies       []*policyDef  // all policies, sorted by (order, name)
	validateExcept []string      // forwarded zones not validated (forwardees.go)
	trustAnchors   []trustAnchor // forwarded zones trusted by their DS
}

type aclDef struct {
	name    string
	entries []string
}

// viewDef is a view (or, for global, the implicit top level) and what it holds.
type viewDef struct {
	name string // "" for the top level
	obj  *bindv1alpha1.BindView
	// key is the BIND name of the view's own key (ViewKeyName), which the
	// view's match-clients admits first: the operator and the secondaries
	// sign everything about the view's zones with it. updateKeys are the
	// update keys of the view's Primary zones, admitted next, so a client
	// that signs an UPDATE lands in the zone's view wherever it sends
	// from. Both are "" / empty for the top level.
	key        string
	updateKeys []string
	keys       []string                 // key, then updateKeys: what the view's match lists admit first
	zonesText  *renderedText            // zones, rendered once for both variants (configZonesText)
	zones      []*bindv1alpha1.BindZone // config zones (Forward, Stub, Secondary), sorted by zone name
	policies   []*policyDef             // sorted by (order, name)
	owners     map[string]owner         // zone name -> the object that declares it, to report clashes
}

// owner is an object that declares a zone, by kind and name: a 10,000-zone
// config names its owners only when two of them clash.
type owner struct{ kind, name string }

func (o owner) String() string { return o.kind + " " + o.name }

type catalogDef struct {
	obj     *bindv1alpha1.BindCatalogZone
	name    string // canonical zone name
	key     string // BIND name of the transfer key
	seedKey string // ConfigData key of the seed
	file    string // zone file in DataDir
	// defaultPrimaries as rendered elements ("198.18.0.1 port 53 key \"k\"").
	defaultPrimaries []string
}

// byName sorts items by name, and items of one name (the same name in two
// namespaces, a zone name two objects declare) by tie. Only those are
// compared by tie: sorting the names alone moves smaller elements and
// makes cheaper comparisons (10,000 names: 1.1-1.4 ms instead of 2.5).
func byName[T any](items []T, name func(*T) (string, string)) []*T {
	// The names are read once, not twice per comparison.
	type keyed struct {
		name string
		item *T
	}
	ks := make([]keyed, len(items))
	for i := range items {
		n, _ := name(&items[i])
		ks[i] = keyed{n, &items[i]}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.name, b.name) })
	out := make([]*T, len(ks))
	for i, k := range ks {
		out[i] = k.item
	}
	for i := 0; i < len(ks); {
		j := i + 1
		for j < len(ks) && ks[j].name == ks[i].name {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(out[i:j], func(a, b *T) int {
				_, ta := name(a)
				_, tb := name(b)
				return strings.Compare(ta, tb)
			})
		}
		i = j
	}
	return out
}

func newModel(in Input) (*model, error) {
	c := in.Cluster
	m := &model{
		in:         in,
		paths:      in.Paths,
		cluster:    c,
		dnsPort:    c.Spec.Ports.DNS,
		keyByObj:   map[string]string{},
		viewByName: map[string]*viewDef{},
		global:     &viewDef{owners: map[string]owner{}},
	}
	if m.dnsPort == 0 {
		m.dnsPort = 53
	}
	m.primPort = in.PrimaryPort
	if m.primPort == 0 {
		m.primPort = m.dnsPort
	}
	for _, p := range []string{in.Paths.ConfigDir, in.Paths.KeysDir, in.Paths.DataDir} {
		if !path.IsAbs(p) {
			return nil, fmt.Errorf("render paths must be absolute, got %q", p)
		}
		if err := safeName("path", p); err != nil {
			return nil, err
		}
	}
	if in.PrimaryAddress != "" {
		a, err := checkIP("the primary address", in.PrimaryAddress)
		if err != nil {
			return nil, err
		}
		m.primary = a
	}
	if err := m.loadKeys(); err != nil {
		return nil, err
	}
	if err := m.loadACLs(); err != nil {
		return nil, err
	}
	if err := m.loadViews(); err != nil {
		return nil, err
	}
	if err := m.loadCatalogs(); err != nil {
		return nil, err
	}
	if err := m.loadZones(); err != nil {
		return nil, err
	}
	if err := m.loadPolicies(); err != nil {
		return nil, err
	}
	var err error
	if m.validateExcept, m.trustAnchors, err = m.forwardedTrust(); err != nil {
		return nil, err
	}
	return m, nil
}

// scopes are where config zones go: every view, or the top level.
func (m *model) scopes() []*viewDef {
	if len(m.views) == 0 {
		return []*viewDef{m.global}
	}
	return m.views
}

func (m *model) view(ref string) *viewDef { return m.viewByName[ref] }

// claim records that owner declares zone in scope v; two owners of one zone
// in one scope would make named refuse the whole config.
func (v *viewDef) claim(zone string, o owner) error {
	if prev, ok := v.owners[zone]; ok {
		where := ""
		if v.name != "" {
			where = " in BindView " + v.name
		}
		return fmt.Errorf("%s and %s both declare zone %s%s; delete or rename one of them", prev, o, zone, where)
	}
	v.owners[zone] = o
	return nil
}

func (m *model) loadViews() error {
	views := byName(m.in.Views, func(v *bindv1alpha1.BindView) (string, string) { return v.Name, v.Namespace })
	slices.SortStableFunc(views, func(a, b *bindv1alpha1.BindView) int {
		return cmp.Compare(a.Spec.EffectiveOrder(), b.Spec.EffectiveOrder())
	})
	for _, v := range views {
		if err := safeName("BindView name", v.Name); err != nil {
			return err
		}
		k, err := m.viewKey(v.Name)
		if err != nil {
			return err
		}
		d := &viewDef{name: v.Name, obj: v, owners: map[string]owner{}, key: k.Name}
		m.viewKeys = append(m.viewKeys, k)
		m.views = append(m.views, d)
		m.viewByName[v.Name] = d
	}
	return nil
}

// viewKey validates the material of a view's key.
func (m *model) viewKey(view string) (TSIGKey, error) {
	what := "the key of BindView " + view
	k, ok := m.in.ViewKeys[view]
	if !ok || k.Secret == "" {
		return k, fmt.Errorf("%s has not been generated yet (the operator keeps it in the cluster's keys Secret); wait for the BindCluster to reconcile", what)
	}
	if want := bindv1alpha1.ViewKeyName(view); k.Name != want {
		return k, fmt.Errorf("%s is named %q instead of %q (this is a bug or a damaged keys Secret)", what, k.Name, want)
	}
	k, err := checkKey(what, k)
	if err != nil {
		return k, err
	}
	if m.hasKey(k.Name) {
		return k, fmt.Errorf("a BindTSIGKey uses the key name %q of %s; give it another keyName", k.Name, what)
	}
	return k, nil
}

// placement resolves a viewRef: the scope an object's zone lives in.
func (m *model) placement(what string, ref *bindv1alpha1.LocalObjectReference) (*viewDef, error) {
	if ref == nil {
		if len(m.views) > 0 {
			return nil, fmt.Errorf("%s has no viewRef, but the cluster has views and BIND needs every zone inside a view; set spec.viewRef", what)
		}
		return m.global, nil
	}
	v := m.view(ref.Name)
	if v == nil {
		return nil, fmt.Errorf("%s names BindView %q, which does not exist in this cluster; create it or fix spec.viewRef", what, ref.Name)
	}
	return v, nil
}

func (m *model) loadCatalogs() error {
	cats := byName(m.in.Catalogs, func(c *bindv1alpha1.BindCatalogZone) (string, string) {
		return string(c.Spec.ZoneName), c.Name
	})
	notify := map[string]bool{}
	for _, c := range cats {
		what := "BindCatalogZone " + c.Name
		if len(m.views) > 0 {
			// A catalog has no viewRef, and with views the primary picks the
			// view of a transfer by the secondary's address and key: a
			// catalog in every view would hand every secondary view the
			// first view's members.
			return fmt.Errorf("%s cannot be used while the cluster has views: catalog zones have no viewRef yet; remove the views or the catalog", what)
		}
		if m.primary == "" {
			return fmt.Errorf("%s needs the primary Service's ClusterIP to render the secondaries' transfers, and the primary Service has none yet; wait for it or check the Service", what)
		}
		name := string(c.Spec.ZoneName)
		if name == "." {
			return fmt.Errorf("%s: the root zone cannot be a catalog zone", what)
		}
		if err := safeName(what+" zone name", name); err != nil {
			return err
		}
		key, err := m.keyRef(what, c.Spec.TransferKeyRef.Name)
		if err != nil {
			return err
		}
		d := catalogDef{
			obj:     c,
			name:    name,
			key:     key,
			seedKey: "catalog." + zoneStem(name) + ".db",
			file:    path.Join(m.paths.catalogDir(), zoneStem(name)+".db"),
		}
		if len(c.Spec.DefaultPrimaries) > 0 {
			for i, p := range c.Spec.DefaultPrimaries {
				s, err := m.remoteServer(fmt.Sprintf("%s spec.defaultPrimaries[%d]", what, i), p)
				if err != nil {
					return err
				}
				d.defaultPrimaries = append(d.defaultPrimaries, s)
			}
		} else {
			d.defaultPrimaries = []string{m.primaryServer(key)}
		}
		if err := m.global.claim(name, owner{"BindCatalogZone", c.Name}); err != nil {
			return err
		}
		m.catalogs = append(m.catalogs, d)
		notify[key] = true
	}
	// Secondaries accept NOTIFYs signed with the transfer key: the primary
	// sends them from its pod IP, which is not the address they transfer
	// from (docs/behaviours.md, "Keyed NOTIFY"). The cluster's
	// transferKeyRef wins over the catalogs' keys.
	if ref := m.cluster.Spec.TransferKeyRef; ref != nil {
		key, err := m.keyRef("BindCluster spec.transferKeyRef", ref.Name)
		if err != nil {
			return err
		}
		notify = map[string]bool{key: true}
		m.transferKey = key
	}
	// The primary signs the NOTIFYs of a view's zones with the view's key.
	for _, v := range m.views {
		notify[v.key] = true
	}
	m.notifyKeys = sortedKeys(notify)
	return nil
}

// primaryServer is the cluster's primary as a primaries/default-primaries
// element, keyed with key.
func (m *model) primaryServer(key string) string {
	s := m.primary
	if m.primPort != 53 {
		s += " port " + strconv.Itoa(int(m.primPort))
	}
	if key != "" {
		s += ` key "` + key + `"`
	}
	return s
}

func (m *model) remoteServer(what string, p bindv1alpha1.RemoteServer) (string, error) {
	a, err := checkIP(what+" address", p.Address)
	if err != nil {
		return "", err
	}
	s := a
	if p.Port != nil && *p.Port != 53 {
		s += " port " + strconv.Itoa(int(*p.Port))
	}
	if p.KeyRef != nil {
		k, err := m.keyRef(what, p.KeyRef.Name)
		if err != nil {
			return "", err
		}
		s += ` key "` + k + `"`
	}
	return s, nil
}

func (m *model) loadZones() error {
	zones := byName(m.in.Zones, func(z *bindv1alpha1.BindZone) (string, string) {
		return string(z.Spec.ZoneName), z.Name
	})
	policies := map[string]*bindv1alpha1.BindDNSSECPolicy{}
	for i := range m.in.DNSSECPolicies {
		p := &m.in.DNSSECPolicies[i]
		policies[p.Name] = p
	}
	used := map[string]bool{}
	forward := map[string]bool{}
	updateView := map[string]*viewDef{} // update key -> the view whose zones it updates
	for _, z := range zones {
		subject := func() string { return "BindZone " + z.Name }
		v, err := namedOnError(subject, func(what string) (*viewDef, error) { return m.zonePlacement(what, z) })
		if err != nil {
			return err
		}
		if err := v.claim(string(z.Spec.ZoneName), owner{"BindZone", z.Name}); err != nil {
			return err
		}
		if err := checkNamedOnError(subject, func(what string) error { return m.checkZone(what, z, policies) }); err != nil {
			return err
		}
		switch z.Spec.Type {
		case bindv1alpha1.ZonePrimary, "":
			if ref := z.Spec.UpdateKeyRef; ref != nil {
				k, _ := m.keyRef("", ref.Name) // checked above
				forward[k] = true
				if v != m.global {
					if prev, ok := updateView[k]; ok && prev != v {
						return fmt.Errorf("BindZone %s uses update key %q in BindView %s, but zones of BindView %s use it too; BIND picks a view by the key that signs an UPDATE, so give each view's zones their own BindTSIGKey", z.Name, k, v.name, prev.name)
					}
					if updateView[k] == nil {
						updateView[k] = v
						v.updateKeys = append(v.updateKeys, k)
					}
				}
			}
			if ref := z.Spec.DNSSECPolicyRef; ref != nil {
				used[ref.Name] = true
			}
		default:
			v.zones = append(v.zones, z)
		}
	}
	for _, name := range sortedKeys(used) {
		if err := safeName("BindDNSSECPolicy name", name); err != nil {
			return err
		}
		m.dnssecPolicies = append(m.dnssecPolicies, policies[name])
	}
	m.forwardKeys = sortedKeys(forward)
	for _, v := range m.views {
		slices.Sort(v.updateKeys)
		v.keys = slices.Concat([]string{v.key}, v.updateKeys)
	}
	m.addViewKeysACL()
	return nil
}

// zonePlacement checks a zone's name and finds the scope it lives in.
func (m *model) zonePlacement(what string, z *bindv1alpha1.BindZone) (*viewDef, error) {
	if err := safeName(what+" zone name", string(z.Spec.ZoneName)); err != nil {
		return nil, err
	}
	return m.placement(what, z.Spec.ViewRef)
}

// checkZone checks what a zone references and its type. Every reference
// is validated now, config zone or not: a runtime zone whose key or policy
// is missing would fail later in rndc addzone with a far less helpful
// message.
func (m *model) checkZone(what string, z *bindv1alpha1.BindZone, policies map[string]*bindv1alpha1.BindDNSSECPolicy) error {
	if err := m.checkZoneRefs(what, z); err != nil {
		return err
	}
	switch z.Spec.Type {
	case bindv1alpha1.ZonePrimary, "":
		if ref := z.Spec.DNSSECPolicyRef; ref != nil && policies[ref.Name] == nil {
			return fmt.Errorf("%s references BindDNSSECPolicy %q, which does not exist; create it or fix spec.dnssecPolicyRef", what, ref.Name)
		}
		if ref := z.Spec.CatalogZoneRef; ref != nil && !slices.ContainsFunc(m.catalogs, func(c catalogDef) bool { return c.obj.Name == ref.Name }) {
			return fmt.Errorf("%s references BindCatalogZone %q, which does not exist in this cluster; create it or fix spec.catalogZoneRef", what, ref.Name)
		}
	case bindv1alpha1.ZoneForward, bindv1alpha1.ZoneStub, bindv1alpha1.ZoneSecondary:
	default:
		return fmt.Errorf("%s has unknown type %q", what, z.Spec.Type)
	}
	return nil
}

func (m *model) checkZoneRefs(what string, z *bindv1alpha1.BindZone) error {
	if ref := z.Spec.UpdateKeyRef; ref != nil {
		if _, err := m.keyRef(what+" spec.updateKeyRef", ref.Name); err != nil {
			return err
		}
	}
	if _, err := m.matchList(what+" spec.allowTransfer", z.Spec.AllowTransfer); err != nil {
		return err
	}
	if _, err := m.matchList(what+" spec.allowQuery", z.Spec.AllowQuery); err != nil {
		return err
	}
	return nil
}
