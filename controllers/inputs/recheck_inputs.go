package inputs

import (
	"errors"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/render"
)

// leftOut are the objects a render leaves out: those the current rules
// refuse (Rechecks), and those that name one of them, since render
// refuses a reference to an object it does not have. Each is kept by name
// with a phrase that says why, for the messages of what names it.
type leftOut struct {
	rc                                  *reconcileutil.Rechecks
	acls, keys, dnssec, views, catalogs map[string]string
	// zones holds why a zone is left out (what it names).
	zones map[string]string
}

func newLeftOut(rc *reconcileutil.Rechecks) *leftOut {
	return &leftOut{rc: rc, acls: map[string]string{}, keys: map[string]string{}, dnssec: map[string]string{},
		views: map[string]string{}, catalogs: map[string]string{}, zones: map[string]string{}}
}

// refusedPhrase names an object the current rules refuse.
func refusedPhrase(kind, name string) string {
	return fmt.Sprintf("%s %q, which the operator's current admission rules refuse (its status says why)", kind, name)
}

// keepValid returns the items the current rules pass; the others are
// recorded in into (nil: not recorded) by name.
func keepValid[T any, P interface {
	*T
	client.Object
}](o *leftOut, kind string, items []T, into map[string]string) []T {
	if o.rc == nil {
		return items
	}
	return slices.DeleteFunc(items, func(x T) bool {
		obj := P(&x)
		if o.rc.Check(obj) == "" {
			return false
		}
		if into != nil {
			into[obj.GetName()] = refusedPhrase(kind, obj.GetName())
		}
		return true
	})
}

// inList is the phrase of the first left-out ACL or key an address match
// list names, "" when it names none.
func (o *leftOut) inList(list []bindv1alpha1.AddressMatchElement) string {
	for _, e := range list {
		if p := o.acls[e.ACLRef]; e.ACLRef != "" && p != "" {
			return p
		}
		if p := o.keys[e.KeyRef]; e.KeyRef != "" && p != "" {
			return p
		}
	}
	return ""
}

func (o *leftOut) inServers(list []bindv1alpha1.RemoteServer) string {
	for _, s := range list {
		if s.KeyRef != nil && o.keys[s.KeyRef.Name] != "" {
			return o.keys[s.KeyRef.Name]
		}
	}
	return ""
}

func refName(ref *bindv1alpha1.LocalObjectReference) string {
	if ref == nil {
		return ""
	}
	return ref.Name
}

// firstOf is the first non-empty phrase.
func firstOf(phrases ...string) string {
	for _, p := range phrases {
		if p != "" {
			return p
		}
	}
	return ""
}

// cascade leaves out what names a left-out object: ACLs (through any
// number of others), views, catalogs, policies and zones, from in and
// acls. It returns an error when the cluster itself, or the zone a clause
// is rendered for (only), names one: render cannot do without it.
func (o *leftOut) cascade(in *render.Input, acls *[]bindv1alpha1.BindACL, only *bindv1alpha1.BindZone) error {
	if o.rc == nil {
		return nil
	}
	named := func(kind, name, why string) string { return fmt.Sprintf("%s %q, which names %s", kind, name, why) }
	for grew := true; grew; {
		grew = false
		for _, a := range *acls {
			if o.acls[a.Name] != "" {
				continue
			}
			if why := o.inList(a.Spec.Entries); why != "" {
				o.acls[a.Name] = named("BindACL", a.Name, why)
				grew = true
			}
		}
	}
	*acls = slices.DeleteFunc(*acls, func(a bindv1alpha1.BindACL) bool { return o.acls[a.Name] != "" })
	in.Views = slices.DeleteFunc(in.Views, func(v bindv1alpha1.BindView) bool {
		why := firstOf(o.inList(v.Spec.MatchClients), o.inList(v.Spec.MatchDestinations), o.inList(v.Spec.AllowRecursion))
		if why != "" {
			o.views[v.Name] = named("BindView", v.Name, why)
		}
		return why != ""
	})
	in.Catalogs = slices.DeleteFunc(in.Catalogs, func(c bindv1alpha1.BindCatalogZone) bool {
		why := firstOf(o.keys[c.Spec.TransferKeyRef.Name], o.inServers(c.Spec.DefaultPrimaries))
		if why != "" {
			o.catalogs[c.Name] = named("BindCatalogZone", c.Name, why)
		}
		return why != ""
	})
	in.Policies = slices.DeleteFunc(in.Policies, func(p bindv1alpha1.BindPolicy) bool {
		return firstOf(o.views[refName(p.Spec.ViewRef)], o.inServers(p.Spec.Primaries)) != ""
	})
	in.Zones = slices.DeleteFunc(in.Zones, func(z bindv1alpha1.BindZone) bool {
		s := &z.Spec
		why := firstOf(o.views[refName(s.ViewRef)], o.keys[refName(s.UpdateKeyRef)], o.inList(s.AllowTransfer), o.inList(s.AllowQuery),
			o.inServers(s.Primaries), o.inServers(s.ExternalSecondaries), o.dnssec[refName(s.DNSSECPolicyRef)], o.catalogs[refName(s.CatalogZoneRef)])
		if why != "" {
			o.zones[z.Name] = why
		}
		return why != ""
	})
	c := &in.Cluster.Spec
	if why := o.keys[refName(c.TransferKeyRef)]; why != "" {
		return &leftOutReferenceError{fmt.Sprintf("spec.transferKeyRef names %s", why) + fixIt}
	}
	if why := o.inList(c.AllowQuery); why != "" {
		return &leftOutReferenceError{fmt.Sprintf("spec.allowQuery names %s", why) + fixIt}
	}
	if r := c.Recursion; r != nil {
		if why := o.inList(r.AllowRecursion); why != "" {
			return &leftOutReferenceError{fmt.Sprintf("spec.recursion.allowRecursion names %s", why) + fixIt}
		}
	}
	if only != nil {
		if why := o.zones[only.Name]; why != "" {
			return &leftOutReferenceError{"the zone names " + why + fixIt}
		}
	}
	return nil
}

// fixIt ends the message of a reference to a left-out object.
const fixIt = "; fix that object, or stop naming it"

// leftOutReferenceError says that the cluster, or the zone a clause is
// for, names an object the render leaves out. Like a Secret a key may not
// use (KeySecretRefusedError), it is the user's to fix: the cluster
// reports it and keeps its running configuration.
type leftOutReferenceError struct{ msg string }

func (e *leftOutReferenceError) Error() string { return e.msg }

// RenderRefused tells whether gathering a render's inputs failed for a
// reason the user must fix (RenderFailed), rather than one to retry.
func RenderRefused(err error) bool {
	var refused *clusterpods.KeySecretRefusedError
	var left *leftOutReferenceError
	var missing *clusterpods.ImportedSecretMissingError
	return errors.As(err, &refused) || errors.As(err, &left) || errors.As(err, &missing)
}
