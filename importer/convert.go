package importer

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/webhooks"
)

// Options say what to import and into which objects.
type Options struct {
	// Root is the folder the server's paths are resolved in ("/" on the
	// server itself; a copy of its files elsewhere).
	Root string
	// Config is named.conf's path as the server sees it.
	Config string
	// Namespace and Cluster name the objects' namespace and the
	// BindCluster every object refers to.
	Namespace, Cluster string
}

// Result is what an import emits.
type Result struct {
	// Objects are the project's objects, in the order to apply them:
	// keys, ACLs, the cluster, views, zones.
	Objects []client.Object
	// Secrets hold the imported keys' material: the only place it goes.
	Secrets []*corev1.Secret
	// Seeds are the ConfigMaps holding the zone files of the zones too
	// large for one BindZone (spec.seedFrom, seed.go), in the zones'
	// order: applied before the zones.
	Seeds  []*corev1.ConfigMap
	Report Report
}

// LabelImportedFrom marks every object an import emits with the server
// name it came from (the cluster name).
const LabelImportedFrom = "bind.unkin.net/imported-from"

// Import reads the configuration and its zone files and converts them.
// An error means nothing can be emitted; what cannot be imported is in
// the report.
func Import(opts Options) (*Result, error) {
	if opts.Root == "" {
		opts.Root = "/"
	}
	stmts, err := ParseConfig(opts.Root, opts.Config)
	if err != nil {
		return nil, err
	}
	c := &converter{opts: opts, res: &Result{}, keys: map[string]string{}, acls: map[string]string{}, primaries: map[string]*Statement{}, names: map[string]bool{}, inViews: map[string]int{}, zonePos: map[*v1.BindZone]Pos{}, dnssecPolicies: map[string]string{}}
	return c.run(stmts)
}

type converter struct {
	opts      Options
	res       *Result
	keys      map[string]string     // BIND key name (canonical) -> BindTSIGKey name
	acls      map[string]string     // ACL name -> BindACL name
	primaries map[string]*Statement // named primaries lists
	names     map[string]bool       // object names taken, by kind/name
	inViews   map[string]int        // zone name (canonical) -> how many views serve it
	directory string                // options { directory }
	options   *Statement
	mode      v1.ClusterMode // the cluster's
	recursion bool           // options { recursion }, named's default when unset
	// policyZones are the response-policy zones by scope (a view's
	// statement, nil for the options) and canonical name (policy.go).
	policyZones map[*Statement]map[string]rpzZone
	// zonePos is where each emitted zone is declared (catalog.go).
	zonePos map[*v1.BindZone]Pos
	// dnssecPolicies: BIND name -> BindDNSSECPolicy name (dnssecpolicy.go).
	dnssecPolicies map[string]string
}

// operatorOwned says whether the operator sets the statement itself, and
// why: the addresses, ports, files and directories (webhooks.OperatorOwned,
// which also refuses them in extraOptions), and a few more it does its own
// way. Such statements are reported as replaced, not as losses.
func operatorOwned(keyword string) (string, bool) {
	if why, ok := webhooks.OperatorOwned(keyword); ok {
		return why, true
	}
	why, ok := map[string]string{
		"logging":         "the operator logs to the pods' standard output (kubectl logs)",
		"notify":          "the operator sends the NOTIFYs of its zones itself, signed, to its own secondaries",
		"allow-new-zones": "the operator adds zones through its agent",
	}[keyword]
	return why, ok
}

func (c *converter) run(stmts []*Statement) (*Result, error) {
	// Pass 1: what others refer to.
	controlKeys := map[string]bool{}
	for _, s := range stmts {
		if s.Keyword() != "controls" {
			continue
		}
		for _, ch := range s.Block {
			for _, t := range ch.Tail {
				if t.Keyword() == "keys" {
					for _, k := range t.Block {
						controlKeys[dns.CanonicalName(k.Keyword())] = true
					}
				}
			}
		}
	}
	for _, s := range stmts {
		if s.Keyword() == "key" && controlKeys[dns.CanonicalName(s.Arg(0))] {
			c.res.Report.replace(s.Pos, "key "+s.Arg(0), "it signs only rndc commands (controls); the agent has its own rndc key")
			continue
		}
		switch s.Keyword() {
		case "options":
			c.options = s
			if d := s.Find("directory"); d != nil {
				c.directory = d.Arg(0)
			}
		case "key":
			c.key(s)
		case "primaries", "masters":
			if s.HasBlock && len(s.Words) >= 2 {
				c.primaries[s.Arg(0)] = s
			}
		}
	}
	for _, s := range stmts {
		switch s.Keyword() {
		case "acl":
			c.acl(s)
		case "view":
			for _, z := range s.Block {
				if z.Keyword() == "zone" {
					c.inViews[dns.CanonicalName(z.Arg(0))]++
				}
			}
		}
	}
	c.collectPolicies(stmts)
	cluster := c.cluster(stmts)
	c.mode = cluster.Spec.Mode
	c.res.Objects = append(c.res.Objects, cluster)
	// Pass 2: views and zones.
	order := int32(0)
	for _, s := range stmts {
		switch kw := s.Keyword(); kw {
		case "options", "key", "acl", "primaries", "masters":
		case "view":
			order += 10
			c.view(s, order)
		case "zone":
			c.zone(s, "", nil)
		case "dnssec-policy":
			c.dnssecPolicy(s)
		default:
			if why, owned := operatorOwned(kw); owned {
				c.res.Report.replace(s.Pos, kw, "%s", why)
			} else {
				c.res.Report.omit(s.Pos, kw, "a %s statement has no counterpart in the operator's API", kw)
			}
		}
	}
	c.catalogs()
	for _, o := range c.res.Objects {
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelImportedFrom] = c.opts.Cluster
		o.SetLabels(labels)
	}
	return c.res, nil
}

func (c *converter) meta(kind, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: c.opts.Namespace, Name: c.uniqueName(kind, name)}
}

// uniqueName makes a Kubernetes object name from a BIND name (lowercase,
// characters of a DNS subdomain), unique within its kind.
func (c *converter) uniqueName(kind, name string) string {
	n := strings.Trim(strings.ToLower(strings.TrimSuffix(name, ".")), ".-")
	n = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, n)
	n = strings.ReplaceAll(n, "..", ".")
	if n == "" {
		n = "root"
	}
	if len(n) > 240 {
		n = n[:240]
	}
	n = strings.Trim(n, ".-")
	out := n
	for i := 2; c.names[kind+"/"+out]; i++ {
		out = fmt.Sprintf("%s-%d", n, i)
	}
	c.names[kind+"/"+out] = true
	return out
}

// key: key "name" { algorithm A; secret "S"; };
func (c *converter) key(s *Statement) {
	name := s.Arg(0)
	alg, secret := "", ""
	if a := s.Find("algorithm"); a != nil {
		alg = strings.ToLower(a.Arg(0))
	}
	if x := s.Find("secret"); x != nil {
		secret = x.Arg(0)
	}
	what := "key " + name
	if !slices.Contains(v1.TSIGAlgorithms, v1.TSIGAlgorithm(alg)) {
		c.res.Report.omit(s.Pos, what, "algorithm %q is not one of %v; clients must move to another key", alg, v1.TSIGAlgorithms)
		return
	}
	if secret == "" {
		c.res.Report.omit(s.Pos, what, "it has no secret")
		return
	}
	m := c.meta("BindTSIGKey", name)
	secretName := m.Name + "-tsig"
	c.keys[dns.CanonicalName(name)] = m.Name
	c.res.Objects = append(c.res.Objects, &v1.BindTSIGKey{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BindTSIGKey"},
		ObjectMeta: m,
		Spec: v1.BindTSIGKeySpec{
			KeyName:        v1.DomainName(strings.TrimSuffix(name, ".")),
			Algorithm:      v1.TSIGAlgorithm(alg),
			SecretName:     secretName,
			ImportExisting: true,
		},
	})
	c.res.Secrets = append(c.res.Secrets, &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: c.opts.Namespace, Name: secretName, Labels: map[string]string{LabelImportedFrom: c.opts.Cluster}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{v1.TSIGSecretKey: []byte(secret)},
	})
}

// acl: acl name { elements };
func (c *converter) acl(s *Statement) {
	name := s.Arg(0)
	m := c.meta("BindACL", name)
	c.acls[name] = m.Name // before its elements: an ACL may not name itself, but the check is the webhook's
	entries, why := c.matchList(s)
	if why != "" {
		delete(c.acls, name)
		c.res.Report.omit(s.Pos, "acl "+name, "%s", why)
		return
	}
	c.res.Objects = append(c.res.Objects, &v1.BindACL{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BindACL"},
		ObjectMeta: m,
		Spec:       v1.BindACLSpec{Entries: entries},
	})
}

// listInto converts o's address_match_list into dst, or reports why it
// cannot (what names it).
func (c *converter) listInto(o *Statement, what string, dst *[]v1.AddressMatchElement) {
	l, why := c.matchList(o)
	if why != "" {
		c.res.Report.omit(o.Pos, what, "%s", why)
		return
	}
	*dst = l
}

// matchList converts an address_match_list block. why says why it cannot
// be (an element with no counterpart: a partial list would match other
// clients, so nothing of it is imported).
func (c *converter) matchList(s *Statement) (out []v1.AddressMatchElement, why string) {
	if !s.HasBlock {
		return nil, "it has no { } list"
	}
	for _, e := range s.Block {
		if e.HasBlock {
			return nil, fmt.Sprintf("the nested list %q has no counterpart: make it an acl and name it", e.Text())
		}
		el, why := element(e.Words, c.keyRef, func(name string) string { return c.acls[name] })
		if why != "" {
			return nil, why
		}
		out = append(out, el)
	}
	return out, ""
}

// keyRef is the BindTSIGKey that holds a BIND key name ("" when none).
func (c *converter) keyRef(name string) string { return c.keys[dns.CanonicalName(name)] }

// cluster converts options { } into the BindCluster.
func (c *converter) cluster(stmts []*Statement) *v1.BindCluster {
	bc := &v1.BindCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BindCluster"},
		ObjectMeta: metav1.ObjectMeta{Namespace: c.opts.Namespace, Name: c.opts.Cluster},
		Spec:       v1.BindClusterSpec{Mode: v1.ModeAuthoritative},
	}
	c.names["BindCluster/"+c.opts.Cluster] = true
	// The cluster recurses when named did anywhere: in its options
	// (recursion is on by default) when there are no views, else in a view
	// (its own statement, else the options'). A server that also serves
	// zones of its own, split-horizon with a recursive internal view as
	// the common case, becomes a Resolver cluster that holds those zones:
	// every view then says whether it recurses (view()), so the views that
	// did not still do not.
	c.recursion = true // named's default
	if c.options != nil {
		if r := c.options.Find("recursion"); r != nil {
			c.recursion = yes(r.Arg(0))
		}
	}
	recurses, views := false, false
	for _, s := range stmts {
		if s.Keyword() == "view" {
			views = true
			recurses = recurses || c.viewRecursion(s)
		}
	}
	if !views {
		recurses = c.recursion
	}
	if c.options == nil {
		if recurses {
			bc.Spec.Mode = v1.ModeResolver
			bc.Spec.Recursion = &v1.RecursionSpec{}
		}
		return bc
	}
	var rec v1.RecursionSpec
	var resolving []*Statement // what only a resolver uses
	for _, o := range c.options.Block {
		kw := o.Keyword()
		what := o.Text()
		switch kw {
		case "allow-recursion", "forwarders", "forward", "dnssec-validation", "allow-query-cache":
			resolving = append(resolving, o)
		}
		switch kw {
		case "allow-query":
			c.listInto(o, what, &bc.Spec.AllowQuery)
		case "recursion":
			// Read above.
		case "allow-query-cache":
			// Reported below: it may be whom the cluster lets recurse.
		case "allow-recursion":
			c.listInto(o, what, &rec.AllowRecursion)
		case "forwarders":
			fw, why := forwarders(o)
			if why != "" {
				c.res.Report.omit(o.Pos, what, "%s", why)
			} else {
				rec.Forwarders = fw
			}
		case "forward":
			rec.ForwardPolicy = forwardPolicy(o.Arg(0))
		case "dnssec-validation":
			switch strings.ToLower(o.Arg(0)) {
			case "auto":
				rec.DNSSECValidation = v1.DNSSECValidationAuto
			case "yes", "true", "1":
				rec.DNSSECValidation = v1.DNSSECValidationYes
			default:
				rec.DNSSECValidation = v1.DNSSECValidationNo
			}
		case "allow-transfer":
			// Zones inherit it: each zone without its own gets it (zone()).
		case "querylog":
			bc.Spec.QueryLog = yes(o.Arg(0))
		case "response-policy":
			// Its zones become BindPolicies (policy.go).
		case "catalog-zones":
			c.res.Report.omit(o.Pos, what, "%s", catalogConsumerWhy)
		case "also-notify":
			c.inheritedAlsoNotify(o, what)
		default:
			if why, owned := operatorOwned(kw); owned {
				c.res.Report.replace(o.Pos, what, "%s", why)
				continue
			}
			if _, errs := webhooks.ValidateOptionStatement(what, nil); len(errs) > 0 {
				c.res.Report.omit(o.Pos, what, "%s", firstSentence(errs[0].Detail))
				continue
			}
			bc.Spec.ExtraOptions = append(bc.Spec.ExtraOptions, what)
		}
	}
	if recurses {
		// Without allow-recursion named lets recurse whom allow-query-cache
		// admits, else whom allow-query admits, else localnets and
		// localhost (the cluster's default).
		var used *Statement
		if c.options.Find("allow-recursion") == nil {
			for _, kw := range []string{"allow-query-cache", "allow-query"} {
				if o := c.options.Find(kw); o != nil {
					if l, why := c.matchList(o); why == "" {
						rec.AllowRecursion, used = l, o
					}
					break
				}
			}
		}
		if o := c.options.Find("allow-query-cache"); o != nil {
			if o == used {
				c.res.Report.converted(o.Pos, o.Text(), "the cluster's recursion.allowRecursion: without allow-recursion, named lets whom allow-query-cache admits recurse")
			} else {
				c.res.Report.omit(o.Pos, o.Text(), "a BindCluster has no allow-query-cache: named derives it from recursion.allowRecursion")
			}
		}
		bc.Spec.Mode = v1.ModeResolver
		bc.Spec.Recursion = &rec
		return bc
	}
	for _, o := range resolving {
		c.res.Report.replace(o.Pos, o.Text(), "recursion is off: named does not use it")
	}
	return bc
}

// firstSentence is a refusal's reason without the advice after it (the
// allow-list of extraOptions would repeat in every line of a report).
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

func yes(s string) bool {
	switch strings.ToLower(s) {
	case "yes", "true", "1":
		return true
	}
	return false
}

func forwardPolicy(s string) v1.ForwardPolicy {
	if strings.EqualFold(s, "first") {
		return v1.ForwardFirst
	}
	return v1.ForwardOnly
}

// forwarders: forwarders [port P] { address [port P]; ... };
func forwarders(s *Statement) ([]v1.Forwarder, string) {
	var out []v1.Forwarder
	defPort, why := portArg(s.Words[1:])
	if why != "" {
		return nil, why
	}
	for _, e := range s.Block {
		if e.HasBlock {
			return nil, fmt.Sprintf("forwarder %q is not an address (and an optional port)", e.Text())
		}
		rs, why := server(e.Words, nil)
		if why != "" {
			return nil, why
		}
		out = append(out, v1.Forwarder{Address: rs.Address, Port: cmp.Or(rs.Port, defPort)})
	}
	return out, ""
}

// view converts a view and its zones.
func (c *converter) view(s *Statement, order int32) {
	name := s.Arg(0)
	m := c.meta("BindView", name)
	v := &v1.BindView{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BindView"},
		ObjectMeta: m,
		Spec:       v1.BindViewSpec{ClusterRef: v1.LocalObjectReference{Name: c.opts.Cluster}, Order: ptr.To(order)},
	}
	c.res.Objects = append(c.res.Objects, v)
	for _, o := range s.Block {
		kw, what := o.Keyword(), "view "+name+": "+o.Text()
		switch kw {
		case "zone":
			c.zone(o, m.Name, s)
		case "allow-transfer", "allow-query":
			// The view's zones inherit it (zone()); checked here so a list
			// that cannot be imported is reported once.
			if _, why := c.matchList(o); why != "" {
				c.res.Report.omit(o.Pos, what, "%s", why)
			}
		case "match-clients":
			c.listInto(o, what, &v.Spec.MatchClients)
		case "match-destinations":
			c.listInto(o, what, &v.Spec.MatchDestinations)
		case "allow-recursion":
			c.listInto(o, what, &v.Spec.AllowRecursion)
		case "allow-query-cache":
			// Reported at the end: it may be whom the view lets recurse.
		case "response-policy":
			// Its zones become BindPolicies (policy.go).
		case "match-recursive-only":
			v.Spec.MatchRecursiveOnly = yes(o.Arg(0))
		case "recursion":
			v.Spec.Recursion = ptr.To(yes(o.Arg(0)))
		case "forwarders":
			if fw, why := forwarders(o); why != "" {
				c.res.Report.omit(o.Pos, what, "%s", why)
			} else {
				v.Spec.Forwarders = fw
			}
		case "key", "acl":
			c.res.Report.omit(o.Pos, what, "a %s inside a view is not imported: move it to the top level", kw)
		case "also-notify":
			c.inheritedAlsoNotify(o, what)
		case "catalog-zones":
			c.res.Report.omit(o.Pos, what, "%s", catalogConsumerWhy)
		default:
			c.res.Report.omit(o.Pos, what, "a view's %s has no counterpart in BindView", kw)
		}
	}
	// A Resolver cluster's options recurse, so each of its views says
	// whether it does, as the old server's did (its own statement, else
	// the options'). What only a recursing view uses goes where it does
	// not: named never read it.
	recurses := false
	if c.mode == v1.ModeResolver {
		recurses = c.viewRecursion(s)
		v.Spec.Recursion = ptr.To(recurses)
	}
	if o := s.Find("allow-query-cache"); o != nil {
		what := "view " + name + ": " + o.Text()
		if recurses && c.viewRecursionFallback(s, v) == o {
			c.res.Report.converted(o.Pos, what, "the view's allowRecursion: without allow-recursion, named lets whom allow-query-cache admits recurse")
		} else {
			c.res.Report.omit(o.Pos, what, "a view's allow-query-cache has no counterpart in BindView")
		}
	} else if recurses {
		c.viewRecursionFallback(s, v)
	}
	if recurses {
		return
	}
	for _, kw := range []string{"allow-recursion", "forwarders"} {
		if o := s.Find(kw); o != nil && (kw != "forwarders" || len(v.Spec.Forwarders) > 0) {
			c.res.Report.replace(o.Pos, "view "+name+": "+o.Text(), "recursion is off in the view: named does not use it")
		}
	}
	v.Spec.AllowRecursion, v.Spec.Forwarders = nil, nil
	if !v.Spec.MatchRecursiveOnly {
		return
	}
	// A view that matches only recursive queries and does not recurse:
	// on an Authoritative cluster no view recurses, so leaving recursion
	// unset says the same; a Resolver cluster's view must say no, which a
	// BindView that matches recursive queries only cannot.
	if c.mode != v1.ModeResolver {
		v.Spec.Recursion = nil
		return
	}
	v.Spec.MatchRecursiveOnly = false
	o := s.Find("match-recursive-only")
	c.res.Report.omit(o.Pos, "view "+name+": "+o.Text(), "a BindView that matches only recursive queries must recurse, and this one did not: its clients' other queries may now land in it; give the view recursion yes, or match its clients otherwise")
}

// viewRecursion says whether named recursed in view: its own statement,
// else the options'.
func (c *converter) viewRecursion(view *Statement) bool {
	if r := view.Find("recursion"); r != nil {
		return yes(r.Arg(0))
	}
	return c.recursion
}

// viewRecursionFallback gives a recursing view without allow-recursion the
// clients named let recurse there: each of allow-recursion,
// allow-query-cache and allow-query is looked up in the view, then in the
// options, and the first found decides. The options' own lists are the
// cluster's already (cluster()), so only a view's list is copied.
// It returns the view's statement it copied, nil when none.
func (c *converter) viewRecursionFallback(view *Statement, v *v1.BindView) *Statement {
	if len(v.Spec.AllowRecursion) > 0 || view.Find("allow-recursion") != nil || c.options != nil && c.options.Find("allow-recursion") != nil {
		return nil
	}
	for _, kw := range []string{"allow-query-cache", "allow-query"} {
		if o := view.Find(kw); o != nil {
			l, why := c.matchList(o)
			if why != "" {
				return nil // reported where the view's zones inherit it, or below
			}
			v.Spec.AllowRecursion = l
			return o
		}
		if c.options != nil && c.options.Find(kw) != nil {
			return nil
		}
	}
	return nil
}

// zone converts one zone statement (in view viewObj, whose statement is
// view, or at the top level).
func (c *converter) zone(s *Statement, viewObj string, view *Statement) {
	name := strings.TrimSuffix(s.Arg(0), ".")
	if name == "" {
		name = "."
	}
	what := "zone " + s.Arg(0)
	if cls := s.Arg(1); cls != "" && !strings.EqualFold(cls, "in") {
		c.res.Report.omit(s.Pos, what, "class %s: only IN zones are served", cls)
		return
	}
	if rp, ok := c.policyZone(view, name); ok {
		c.policy(s, viewObj, rp)
		return
	}
	typ := ""
	if t := s.Find("type"); t != nil {
		typ = strings.ToLower(t.Arg(0))
	}
	z := &v1.BindZone{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BindZone"},
		Spec:     v1.BindZoneSpec{ClusterRef: v1.LocalObjectReference{Name: c.opts.Cluster}, ZoneName: v1.DomainName(name)},
	}
	switch typ {
	case "primary", "master":
		z.Spec.Type = v1.ZonePrimary
	case "secondary", "slave":
		z.Spec.Type = v1.ZoneSecondary
	case "stub", "forward":
		// named uses them only to resolve.
		if c.mode != v1.ModeResolver {
			c.res.Report.omit(s.Pos, what+" ("+typ+")", "named uses %s zones only when it recurses, and this server recursed nowhere (recursion no), so the zone was never used; turn recursion on where it should be, and the import makes a Resolver cluster that holds it", typ)
			return
		}
		z.Spec.Type = v1.ZoneStub
		if typ == "forward" {
			z.Spec.Type = v1.ZoneForward
		}
	case "hint":
		c.res.Report.replace(s.Pos, what+" (hint)", "named's built-in root hints serve a resolver cluster")
		return
	default:
		c.res.Report.omit(s.Pos, what, "type %q has no counterpart (Primary, Secondary, Stub, Forward)", typ)
		return
	}
	prefix := ""
	if viewObj != "" {
		z.Spec.ViewRef = &v1.LocalObjectReference{Name: viewObj}
		// A zone that several views serve is named after each view.
		if c.inViews[dns.CanonicalName(name)] > 1 {
			prefix = viewObj + "-"
		}
	}
	z.ObjectMeta = c.meta("BindZone", prefix+name)
	// Before the zone file: whether the zone is signed decides what its
	// DNSSEC records are.
	if o := s.Find("dnssec-policy"); o != nil && z.Spec.Type == v1.ZonePrimary {
		c.signedZone(z, s, o)
	}
	ownTransfer, ownQuery, ownNotify := false, false, false
	for _, o := range s.Block {
		kw, ow := o.Keyword(), what+": "+o.Text()
		switch kw {
		case "type":
		case "dnssec-policy":
			if z.Spec.Type != v1.ZonePrimary {
				c.res.Report.omit(o.Pos, ow, "only a Primary zone is signed by the cluster; a %s zone serves what its primaries sign", z.Spec.Type)
			}
		case "inline-signing", "key-directory":
			if z.Spec.DNSSECPolicyRef != nil {
				c.res.Report.replace(o.Pos, ow, "the operator sets it for a signed zone (inline signing unless the zone takes updates; the keys in the pods' own key-directory)")
			} else {
				c.res.Report.replace(o.Pos, ow, "it matters only to a signed zone")
			}
		case "auto-dnssec":
			c.res.Report.omit(o.Pos, ow, "auto-dnssec is replaced by dnssec-policy in BIND 9.18; sign the zone with a BindDNSSECPolicy")
		case "file":
			if z.Spec.Type != v1.ZonePrimary {
				c.res.Report.replace(o.Pos, ow, "the operator keeps the transferred copy on the pods")
				continue
			}
			if !c.zoneFile(z, o) {
				return
			}
		case "primaries", "masters":
			if l, why := c.remoteServers(o); why != "" {
				c.res.Report.omit(o.Pos, ow, "%s", why)
			} else {
				z.Spec.Primaries = l
			}
		case "forwarders":
			if fw, why := forwarders(o); why != "" {
				c.res.Report.omit(o.Pos, ow, "%s", why)
			} else {
				z.Spec.Forwarders = fw
			}
		case "forward":
			z.Spec.ForwardPolicy = forwardPolicy(o.Arg(0))
		case "allow-transfer":
			ownTransfer = true
			c.listInto(o, ow, &z.Spec.AllowTransfer)
		case "allow-query":
			ownQuery = true
			c.listInto(o, ow, &z.Spec.AllowQuery)
		case "allow-update":
			l, why := c.matchList(o)
			switch {
			case why != "":
				c.res.Report.omit(o.Pos, ow, "%s", why)
			case len(l) == 1 && l[0].KeyRef != "" && !l[0].Negate:
				z.Spec.UpdateKeyRef = &v1.LocalObjectReference{Name: l[0].KeyRef}
			case len(l) == 1 && l[0].Builtin == v1.BuiltinNone:
			default:
				c.res.Report.omit(o.Pos, ow, "only one key may update a zone (spec.updateKeyRef); updates by address are not accepted")
			}
		case "also-notify":
			ownNotify = true
			l, why := c.alsoNotify(o)
			switch {
			case z.Spec.Type != v1.ZonePrimary:
				c.res.Report.omit(o.Pos, ow, "only a Primary zone notifies servers outside the cluster (spec.externalSecondaries); a secondary copy is notified by its own primaries")
			case why != "":
				c.res.Report.omit(o.Pos, ow, "%s", why)
			default:
				z.Spec.ExternalSecondaries = l
				c.res.Report.converted(o.Pos, ow, "%s", externalSecondariesWhy)
			}
		default:
			if why, owned := operatorOwned(kw); owned {
				c.res.Report.replace(o.Pos, ow, "%s", why)
			} else {
				c.res.Report.omit(o.Pos, ow, "a zone's %s has no counterpart in BindZone", kw)
			}
		}
	}
	// named's inheritance: a zone without its own list takes its view's,
	// else the options' (allow-query of the options is the cluster's).
	inherit := func(keyword string, scopes ...*Statement) []v1.AddressMatchElement {
		for _, sc := range scopes {
			if sc == nil {
				continue
			}
			if o := sc.Find(keyword); o != nil {
				l, _ := c.matchList(o) // a list that cannot be imported is reported where it is
				return l
			}
		}
		return nil
	}
	if !ownTransfer && (z.Spec.Type == v1.ZonePrimary || z.Spec.Type == v1.ZoneSecondary) {
		z.Spec.AllowTransfer = inherit("allow-transfer", view, c.options)
	}
	if !ownQuery {
		z.Spec.AllowQuery = inherit("allow-query", view)
	}
	if !ownNotify && z.Spec.Type == v1.ZonePrimary {
		for _, sc := range []*Statement{view, c.options} {
			if sc == nil {
				continue
			}
			if o := sc.Find("also-notify"); o != nil {
				z.Spec.ExternalSecondaries, _ = c.alsoNotify(o) // reported where it is
				break
			}
		}
	}
	c.zonePos[z] = s.Pos
	c.res.Objects = append(c.res.Objects, z)
}

// externalSecondariesWhy is how the report explains an imported
// also-notify.
const externalSecondariesWhy = "spec.externalSecondaries: each is notified, and may transfer the zone (with its key when it has one, else from its address), which also-notify alone did not grant"

// alsoNotify converts an also-notify list into external secondaries, each
// once; why says why it cannot be.
func (c *converter) alsoNotify(o *Statement) ([]v1.RemoteServer, string) {
	l, why := c.remoteServers(o)
	if why != "" {
		return nil, why
	}
	l = uniqueServers(l)
	if len(l) > 16 {
		return nil, fmt.Sprintf("%d servers: spec.externalSecondaries holds 16", len(l))
	}
	return l, ""
}

// inheritedAlsoNotify reports an also-notify of the options or a view,
// which named gives every primary zone without its own.
func (c *converter) inheritedAlsoNotify(o *Statement, what string) {
	if _, why := c.alsoNotify(o); why != "" {
		c.res.Report.omit(o.Pos, what, "%s", why)
		return
	}
	c.res.Report.converted(o.Pos, what, "every Primary zone without its own also-notify gets it (named's inheritance) as %s", externalSecondariesWhy)
}

// remoteServers: primaries [port P] { address [port P] [key K]; | list; };
func (c *converter) remoteServers(s *Statement) ([]v1.RemoteServer, string) {
	words := s.Words[1:]
	if kw := s.Keyword(); (kw == "primaries" || kw == "masters") && c.primaries[s.Arg(0)] == s {
		words = words[1:] // a named list: "primaries NAME [port P] { ... }"
	}
	defPort, why := portArg(words)
	if why != "" {
		return nil, why
	}
	var out []v1.RemoteServer
	for _, e := range s.Block {
		w := e.Words
		if len(w) == 0 || e.HasBlock {
			return nil, fmt.Sprintf("%q has no counterpart", e.Text())
		}
		if list, ok := c.primaries[w[0].Text]; ok && len(w) == 1 {
			l, why := c.remoteServers(list)
			if why != "" {
				return nil, why
			}
			out = append(out, l...)
			continue
		}
		rs, why := server(w, c.keyRef)
		if why != "" {
			return nil, why
		}
		rs.Port = cmp.Or(rs.Port, defPort)
		out = append(out, rs)
	}
	return out, ""
}

// zoneFile reads a primary zone's file into its SOA and record sets. It
// is false when the file cannot be read: named would not serve the zone,
// and neither does the import.
func (c *converter) zoneFile(z *v1.BindZone, o *Statement) bool {
	file := o.Arg(0)
	origin := string(z.Spec.ZoneName)
	data, err := ReadZoneFile(c.opts.Root, c.directory, file, origin)
	if err != nil {
		c.res.Report.omit(o.Pos, "zone "+origin, "its zone file cannot be read, so named does not serve it either: %v", err)
		return false
	}
	soa := data.SOA
	// The SOA's TTL is the file's $TTL where it sets one: the zone's
	// default for what sets none (the seed's NS and the SOA itself).
	z.Spec.DefaultTTL = ptr.To(v1.TTL(min(soa.Hdr.Ttl, 1<<31-1)))
	z.Spec.SOA = &v1.SOASpec{
		PrimaryNameServer: v1.DomainName(strings.TrimSuffix(soa.Ns, ".")),
		ResponsiblePerson: v1.DomainName(strings.TrimSuffix(soa.Mbox, ".")),
		Refresh:           ptr.To(int32(min(soa.Refresh, 1<<31-1))),
		Retry:             ptr.To(int32(min(soa.Retry, 1<<31-1))),
		Expire:            ptr.To(int32(min(soa.Expire, 1<<31-1))),
		Minimum:           ptr.To(int32(min(soa.Minttl, 1<<31-1))),
	}
	apex := dns.CanonicalName(origin)
	type setKey struct{ name, typ string }
	sets := map[setKey]*v1.RecordSet{}
	var order []setKey
	// kept is what a seed would hold (seed.go); pending what spec.records
	// leaves out, reported only when the zone is not seeded.
	var kept []PosRR
	var pending []Finding
	for _, r := range data.Records {
		h := r.RR.Header()
		owner := dns.CanonicalName(h.Name)
		typ := dns.Type(h.Rrtype).String() // TYPEnnn for a type without a name
		what := fmt.Sprintf("%s %s", owner, typ)
		if !dns.IsSubDomain(apex, owner) {
			c.res.Report.omit(r.Pos, what, "it lies outside the zone %s", origin)
			continue
		}
		if slices.Contains(dnssecTypes, h.Rrtype) {
			if z.Spec.DNSSECPolicyRef != nil {
				c.res.Report.replace(r.Pos, what, "the signer's record: the cluster signs the zone again with its BindDNSSECPolicy")
			} else {
				c.res.Report.omit(r.Pos, what, "the signer's record, and the zone is imported unsigned (it names no dnssec-policy the import carries over)")
			}
			continue
		}
		kept = append(kept, r)
		if !slices.Contains(v1.RecordTypes, v1.RecordType(typ)) {
			pending = append(pending, Finding{Pos: r.Pos, What: what, Why: fmt.Sprintf("type %s is not one the operator manages (%v)", typ, v1.RecordTypes)})
			continue
		}
		rel := "@"
		if owner != apex {
			rel = strings.TrimSuffix(strings.TrimSuffix(owner, apex), ".")
		}
		k := setKey{rel, typ}
		set, ok := sets[k]
		if !ok {
			set = &v1.RecordSet{Name: v1.RecordName(rel), Type: v1.RecordType(typ), TTL: ptr.To(v1.TTL(h.Ttl))}
			sets[k] = set
			order = append(order, k)
		} else if v1.TTL(h.Ttl) != *set.TTL {
			// named serves one TTL per set, the first loaded.
			pending = append(pending, Finding{Pos: r.Pos, What: what, Why: fmt.Sprintf("TTL %d differs from the set's %d; the set keeps %d as named does", h.Ttl, *set.TTL, *set.TTL)})
		}
		v := Presentation(r.RR)
		if !slices.Contains(set.Values, v) {
			set.Values = append(set.Values, v)
		}
	}
	for _, k := range order {
		z.Spec.Records = append(z.Spec.Records, *sets[k])
	}
	if n, size := len(z.Spec.Records), specBytes(z.Spec); n > v1.MaxZoneRecordSets || size > maxZoneObjectBytes {
		// More than one BindZone holds: the file itself is the zone's
		// seed, loaded as it is (its MNAME too: the file has the zone's
		// NS and glue).
		return c.seedZone(z, o, soa, kept, n, size)
	}
	c.res.Report.Findings = append(c.res.Report.Findings, pending...)
	// named loads a zone whose SOA MNAME lies inside it without an
	// address; the operator does not, since the MNAME is also the NS of
	// the zone's seed (the small one it makes itself).
	if mname := dns.CanonicalName(soa.Ns); dns.IsSubDomain(apex, mname) {
		rel := strings.TrimSuffix(strings.TrimSuffix(mname, apex), ".")
		if rel == "" {
			rel = "@"
		}
		if sets[setKey{rel, "A"}] == nil && sets[setKey{rel, "AAAA"}] == nil {
			z.Spec.SOA.PrimaryNameServer = ""
			c.res.Report.omit(Pos{File: file}, "SOA MNAME "+soa.Ns, "it lies inside the zone with no A or AAAA record, which the operator needs to seed the zone; the SOA names the cluster's query Service instead")
		}
	}
	return true
}

// maxZoneObjectBytes bounds an emitted BindZone's spec: etcd stores at
// most 1.5 MiB per object, and server-side apply's managedFields repeat
// every record set's key beside it.
const maxZoneObjectBytes = 512 << 10

func specBytes(spec v1.BindZoneSpec) int {
	b, _ := json.Marshal(spec)
	return len(b)
}

// dnssecTypes are made by a signer; a BindDNSSECPolicy signs anew.
var dnssecTypes = []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNSEC3, dns.TypeNSEC3PARAM, dns.TypeDNSKEY, dns.TypeCDS, dns.TypeCDNSKEY, typeBINDSigning}

// typeBINDSigning is the private type (sig-signing-type, 65534 by
// default) in which BIND keeps the state of a zone's signing.
const typeBINDSigning = 65534

// uniqueServers drops a server listed again (same address and port, as
// admission compares them), keeping the first.
func uniqueServers(l []v1.RemoteServer) []v1.RemoteServer {
	seen := map[string]bool{}
	out := l[:0:0]
	for _, rs := range l {
		addr, port := rs.AddressPort() // server() wrote the address canonical
		k := fmt.Sprintf("%s#%d", addr, port)
		if !seen[k] {
			seen[k] = true
			out = append(out, rs)
		}
	}
	return out
}
