package webhooks

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-bindview,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindviews,verbs=create;update,versions=v1alpha1,name=mbindview.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-bind-unkin-net-v1alpha1-bindview,mutating=false,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindviews,verbs=create;update,versions=v1alpha1,name=vbindview.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// BindViewWebhook defaults and validates BindViews.
type BindViewWebhook struct {
	Reader client.Reader
}

var (
	_ admission.Defaulter[*v1alpha1.BindView] = &BindViewWebhook{}
	_ admission.Validator[*v1alpha1.BindView] = &BindViewWebhook{}
)

// Default fills the order (BindView.SetDefaults) and canonicalises the
// addresses. recursion stays unset when unset: it then follows the
// cluster's mode, which can be read only at render.
func (w *BindViewWebhook) Default(_ context.Context, v *v1alpha1.BindView) error {
	v.SetDefaults()
	defaultAddressList(v.Spec.MatchClients)
	defaultAddressList(v.Spec.MatchDestinations)
	defaultAddressList(v.Spec.AllowRecursion)
	defaultForwarders(v.Spec.Forwarders)
	return nil
}

// ValidateCreate validates a new view.
func (w *BindViewWebhook) ValidateCreate(ctx context.Context, v *v1alpha1.BindView) (admission.Warnings, error) {
	return w.validate(ctx, v)
}

// ValidateUpdate validates a change.
func (w *BindViewWebhook) ValidateUpdate(ctx context.Context, _, newV *v1alpha1.BindView) (admission.Warnings, error) {
	return w.validate(ctx, newV)
}

// ValidateDelete allows every deletion.
func (w *BindViewWebhook) ValidateDelete(context.Context, *v1alpha1.BindView) (admission.Warnings, error) {
	return nil, nil
}

func (w *BindViewWebhook) validate(ctx context.Context, v *v1alpha1.BindView) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	errs := ValidateBindViewSpec(&v.Spec, spec)
	var warns admission.Warnings
	f := refs{r: w.Reader, ns: namespaceOf(ctx, v.Namespace)}
	var cluster v1alpha1.BindCluster
	if f.expect(ctx, "spec.clusterRef", "BindCluster", v.Spec.ClusterRef.Name, &cluster, &warns) && cluster.Spec.Mode == v1alpha1.ModeAuthoritative {
		if v.Spec.Recursion != nil && *v.Spec.Recursion {
			errs = append(errs, field.Invalid(spec.Child("recursion"), true, fmt.Sprintf("BindCluster %q is Authoritative and never recurses; remove recursion or use a Resolver cluster", cluster.Name)))
		} else if v.Spec.Recursion == nil && len(v.Spec.Forwarders) > 0 {
			errs = append(errs, field.Invalid(spec.Child("forwarders"), len(v.Spec.Forwarders), fmt.Sprintf("BindCluster %q is Authoritative, so the view does not recurse and forwarders would never be used; remove them or use a Resolver cluster", cluster.Name)))
		}
	}
	var catalogs v1alpha1.BindCatalogZoneList
	if f.list(ctx, &catalogs, &warns) {
		for _, c := range catalogs.Items {
			if c.Spec.ClusterRef.Name == v.Spec.ClusterRef.Name {
				errs = append(errs, field.Invalid(spec.Child("clusterRef", "name"), v.Spec.ClusterRef.Name, fmt.Sprintf("BindCluster %q has catalog zone %q, and catalog zones cannot be used with views yet; delete the catalog first, or put the view on a cluster without catalogs", c.Spec.ClusterRef.Name, c.Name)))
				break
			}
		}
	}
	if v.Spec.MatchRecursiveOnly {
		var zones v1alpha1.BindZoneList
		if f.list(ctx, &zones, &warns) {
			for _, z := range zones.Items {
				if z.Spec.ClusterRef.Name == v.Spec.ClusterRef.Name && z.Spec.ViewRef != nil && z.Spec.ViewRef.Name == v.Name && z.Spec.IsPrimary() {
					errs = append(errs, field.Invalid(spec.Child("matchRecursiveOnly"), true, fmt.Sprintf("the view holds Primary zone %q, whose transfers, NOTIFYs and UPDATEs are not recursive queries and would never reach it; leave matchRecursiveOnly off, or move the zone to another view", z.Name)))
					break
				}
			}
		}
	}
	f.addressListRefs(ctx, "spec.matchClients", v.Spec.MatchClients, &warns)
	f.addressListRefs(ctx, "spec.matchDestinations", v.Spec.MatchDestinations, &warns)
	f.addressListRefs(ctx, "spec.allowRecursion", v.Spec.AllowRecursion, &warns)
	return warns, invalid("BindView", v.Name, errs)
}

// ValidateBindViewSpec checks a view spec without other objects, where the
// CRD cannot: the address lists and forwarders.
func ValidateBindViewSpec(s *v1alpha1.BindViewSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, ValidateAddressMatchList(s.MatchClients, fldPath.Child("matchClients"))...)
	errs = append(errs, ValidateAddressMatchList(s.MatchDestinations, fldPath.Child("matchDestinations"))...)
	errs = append(errs, ValidateAddressMatchList(s.AllowRecursion, fldPath.Child("allowRecursion"))...)
	errs = append(errs, ValidateServers(s.Forwarders, fldPath.Child("forwarders"))...)
	errs = append(errs, ValidateForwarderTargets(s.Forwarders, s.ClusterRef.Name, fldPath.Child("forwarders"))...)
	return errs
}
