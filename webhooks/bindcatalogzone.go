package webhooks

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-bindcatalogzone,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindcatalogzones,verbs=create;update,versions=v1alpha1,name=mbindcatalogzone.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-bind-unkin-net-v1alpha1-bindcatalogzone,mutating=false,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindcatalogzones,verbs=create;update,versions=v1alpha1,name=vbindcatalogzone.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// BindCatalogZoneWebhook defaults and validates BindCatalogZones.
type BindCatalogZoneWebhook struct {
	Reader client.Reader
}

var (
	_ admission.Defaulter[*v1alpha1.BindCatalogZone] = &BindCatalogZoneWebhook{}
	_ admission.Validator[*v1alpha1.BindCatalogZone] = &BindCatalogZoneWebhook{}
)

// Default canonicalises the zone name and the primaries' addresses.
func (w *BindCatalogZoneWebhook) Default(_ context.Context, c *v1alpha1.BindCatalogZone) error {
	c.Spec.ZoneName = v1alpha1.DomainName(records.CanonicalZone(string(c.Spec.ZoneName)))
	defaultRemoteServers(c.Spec.DefaultPrimaries)
	return nil
}

// ValidateCreate validates a new catalog.
func (w *BindCatalogZoneWebhook) ValidateCreate(ctx context.Context, c *v1alpha1.BindCatalogZone) (admission.Warnings, error) {
	return w.validate(ctx, c)
}

// ValidateUpdate validates a change.
func (w *BindCatalogZoneWebhook) ValidateUpdate(ctx context.Context, _, newC *v1alpha1.BindCatalogZone) (admission.Warnings, error) {
	return w.validate(ctx, newC)
}

// ValidateDelete allows every deletion.
func (w *BindCatalogZoneWebhook) ValidateDelete(context.Context, *v1alpha1.BindCatalogZone) (admission.Warnings, error) {
	return nil, nil
}

func (w *BindCatalogZoneWebhook) validate(ctx context.Context, c *v1alpha1.BindCatalogZone) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	errs := ValidateBindCatalogZoneSpec(&c.Spec, spec)
	var warns admission.Warnings
	f := refs{r: w.Reader, ns: namespaceOf(ctx, c.Namespace)}
	f.expect(ctx, "spec.clusterRef", "BindCluster", c.Spec.ClusterRef.Name, &v1alpha1.BindCluster{}, &warns)
	f.expect(ctx, "spec.transferKeyRef", "BindTSIGKey", c.Spec.TransferKeyRef.Name, &v1alpha1.BindTSIGKey{}, &warns)
	f.remoteServerRefs(ctx, "spec.defaultPrimaries", c.Spec.DefaultPrimaries, &warns)
	errs = append(errs, zoneNameTaken(ctx, f, c.Spec.ClusterRef.Name, "", string(c.Spec.ZoneName), "BindCatalogZone", c.Name, spec.Child("zoneName"), &warns)...)
	var views v1alpha1.BindViewList
	if f.list(ctx, &views, &warns) {
		for _, v := range views.Items {
			if v.Spec.ClusterRef.Name == c.Spec.ClusterRef.Name {
				errs = append(errs, field.Invalid(spec.Child("clusterRef", "name"), c.Spec.ClusterRef.Name, fmt.Sprintf("BindCluster %q has views (e.g. %q), and catalog zones cannot be used with views yet; use a cluster without views, or add the zones without a catalog", v.Spec.ClusterRef.Name, v.Name)))
				break
			}
		}
	}
	return warns, invalid("BindCatalogZone", c.Name, errs)
}

// ValidateBindCatalogZoneSpec checks a catalog spec without other objects,
// where the CRD cannot: the same primary twice.
func ValidateBindCatalogZoneSpec(s *v1alpha1.BindCatalogZoneSpec, fldPath *field.Path) field.ErrorList {
	return ValidateServers(s.DefaultPrimaries, fldPath.Child("defaultPrimaries"))
}
