package importer

import (
	"context"
	"fmt"
	"runtime"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/webhooks"
)

// Validate runs each object through the admission rules that need no API
// server: the mutating webhook's defaults, then the validating webhook's
// spec rules (webhooks.ValidateXSpec), and the object name rules. It
// returns one error per refused object, with the field paths; an import
// that emits one is a bug of the importer. Rules that read other objects
// (references, names taken) and the CRDs' own schema and CEL rules are
// applied by the API server: `kubectl apply --dry-run=server`.
func Validate(objs []client.Object) []error {
	ctx := context.Background()
	zones := map[client.ObjectKey]*v1.BindZone{}
	for _, o := range objs {
		if z, ok := o.(*v1.BindZone); ok {
			zones[client.ObjectKeyFromObject(z)] = z
		}
	}
	// Each object is checked alone, on every core: a large import's
	// zones hold a million records to canonicalise.
	found := make([]error, len(objs))
	g := new(errgroup.Group)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, o := range objs {
		g.Go(func() error {
			found[i] = validateOne(ctx, o, zones)
			return nil
		})
	}
	_ = g.Wait()
	var out []error
	for _, err := range found {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// validateOne is Validate of one object (a copy: defaulting changes it);
// zones are the emitted zones, for a DNSRecord's.
func validateOne(ctx context.Context, o client.Object, zones map[client.ObjectKey]*v1.BindZone) error {
	o = o.DeepCopyObject().(client.Object)
	var errs field.ErrorList
	for _, msg := range validation.NameIsDNSSubdomain(o.GetName(), false) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), o.GetName(), msg))
	}
	spec := field.NewPath("spec")
	switch x := o.(type) {
	case *v1.BindCluster:
		_ = (&webhooks.BindClusterWebhook{}).Default(ctx, x)
		errs = append(errs, webhooks.ValidateBindClusterSpec(&x.Spec, spec)...)
		_, optErrs := webhooks.ValidateExtraOptions(x.Spec.ExtraOptions, spec.Child("extraOptions"))
		errs = append(errs, optErrs...)
	case *v1.BindZone:
		_ = (&webhooks.BindZoneWebhook{}).Default(ctx, x)
		errs = append(errs, webhooks.ValidateBindZoneSpec(&x.Spec, spec)...)
	case *v1.BindTSIGKey:
		_ = (&webhooks.BindTSIGKeyWebhook{}).Default(ctx, x)
		errs = append(errs, webhooks.ValidateBindTSIGKeySpec(&x.Spec, spec)...)
	case *v1.BindView:
		_ = (&webhooks.BindViewWebhook{}).Default(ctx, x)
		errs = append(errs, webhooks.ValidateBindViewSpec(&x.Spec, spec)...)
	case *v1.BindACL:
		_ = (&webhooks.BindACLWebhook{}).Default(ctx, x)
		errs = append(errs, webhooks.ValidateBindACLSpec(x.Name, &x.Spec, spec)...)
	case *v1.BindCatalogZone:
		_ = (&webhooks.BindCatalogZoneWebhook{}).Default(ctx, x)
		errs = append(errs, webhooks.ValidateBindCatalogZoneSpec(&x.Spec, spec)...)
	case *v1.BindPolicy:
		_ = (&webhooks.BindPolicyWebhook{}).Default(ctx, x)
		errs = append(errs, webhooks.ValidateBindPolicySpec(&x.Spec, spec)...)
	case *v1.BindDNSSECPolicy:
		_ = (&webhooks.BindDNSSECPolicyWebhook{}).Default(ctx, x)
		errs = append(errs, webhooks.ValidateBindDNSSECPolicySpec(&x.Spec, spec)...)
	case *v1.DNSRecord:
		// The zone's name when the zone is among the objects; else the
		// data's syntax alone (the API server checks the rest).
		zoneName := ""
		ns := x.Spec.ZoneRef.Namespace
		if ns == "" {
			ns = x.Namespace
		}
		if z := zones[client.ObjectKey{Namespace: ns, Name: x.Spec.ZoneRef.Name}]; z != nil {
			zoneName = string(z.Spec.ZoneName)
			x.SetDefaults(z)
		}
		errs = append(errs, webhooks.ValidateDNSRecordSpec(&x.Spec, zoneName, spec)...)
	default:
		errs = append(errs, field.InternalError(nil, fmt.Errorf("the importer emitted a %T, which it cannot validate", o)))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), errs.ToAggregate())
	}
	return nil
}
