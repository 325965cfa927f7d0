package webhooks

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-bindacl,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindacls,verbs=create;update,versions=v1alpha1,name=mbindacl.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-bind-unkin-net-v1alpha1-bindacl,mutating=false,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindacls,verbs=create;update,versions=v1alpha1,name=vbindacl.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// BindACLWebhook defaults and validates BindACLs.
type BindACLWebhook struct {
	Reader client.Reader
}

var (
	_ admission.Defaulter[*v1alpha1.BindACL] = &BindACLWebhook{}
	_ admission.Validator[*v1alpha1.BindACL] = &BindACLWebhook{}
)

// Default canonicalises the addresses. Order is kept: BIND stops at the
// first match, so sorting would change the meaning.
func (w *BindACLWebhook) Default(_ context.Context, a *v1alpha1.BindACL) error {
	defaultAddressList(a.Spec.Entries)
	return nil
}

// ValidateCreate validates a new ACL.
func (w *BindACLWebhook) ValidateCreate(ctx context.Context, a *v1alpha1.BindACL) (admission.Warnings, error) {
	return w.validate(ctx, a)
}

// ValidateUpdate validates a change.
func (w *BindACLWebhook) ValidateUpdate(ctx context.Context, _, a *v1alpha1.BindACL) (admission.Warnings, error) {
	return w.validate(ctx, a)
}

// ValidateDelete allows every deletion.
func (w *BindACLWebhook) ValidateDelete(context.Context, *v1alpha1.BindACL) (admission.Warnings, error) {
	return nil, nil
}

func (w *BindACLWebhook) validate(ctx context.Context, a *v1alpha1.BindACL) (admission.Warnings, error) {
	entries := field.NewPath("spec", "entries")
	errs := ValidateBindACLSpec(a.Name, &a.Spec, field.NewPath("spec"))
	var warns admission.Warnings
	f := refs{r: w.Reader, ns: namespaceOf(ctx, a.Namespace)}
	f.addressListRefs(ctx, "spec.entries", a.Spec.Entries, &warns)
	// A loop through other ACLs makes BIND refuse the config of every
	// cluster that renders them; find it now, with this object's new
	// entries in place of its stored ones.
	var acls v1alpha1.BindACLList
	if len(errs) == 0 && f.list(ctx, &acls, &warns) {
		graph := map[string][]string{}
		for _, o := range acls.Items {
			graph[o.Name] = aclRefs(o.Spec.Entries)
		}
		graph[a.Name] = aclRefs(a.Spec.Entries)
		if cycle := findCycle(graph, a.Name); cycle != nil {
			errs = append(errs, field.Invalid(entries, strings.Join(cycle, " -> "), "the ACLs refer to each other in a loop, which BIND refuses; remove one aclRef of the loop"))
		}
	}
	return warns, invalid("BindACL", a.Name, errs)
}

// ValidateBindACLSpec checks an ACL without other objects.
func ValidateBindACLSpec(name string, s *v1alpha1.BindACLSpec, fldPath *field.Path) field.ErrorList {
	ep := fldPath.Child("entries")
	errs := ValidateAddressMatchList(s.Entries, ep)
	for i, e := range s.Entries {
		if e.ACLRef != "" && e.ACLRef == name {
			errs = append(errs, field.Invalid(ep.Index(i).Child("aclRef"), e.ACLRef, "an ACL cannot include itself; list the addresses instead"))
		}
	}
	return errs
}

func aclRefs(es []v1alpha1.AddressMatchElement) []string {
	var out []string
	for _, e := range es {
		if e.ACLRef != "" {
			out = append(out, e.ACLRef)
		}
	}
	return out
}

// findCycle returns a path start -> ... -> start if one exists. The graph
// holds at most the namespace's ACLs, so a depth-first search is enough.
func findCycle(graph map[string][]string, start string) []string {
	visited := map[string]bool{}
	var path []string
	var dfs func(n string) bool
	dfs = func(n string) bool {
		path = append(path, n)
		for _, m := range graph[n] {
			if m == start {
				path = append(path, m)
				return true
			}
			if !visited[m] {
				visited[m] = true
				if dfs(m) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if dfs(start) {
		return path
	}
	return nil
}
