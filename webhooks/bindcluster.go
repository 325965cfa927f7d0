package webhooks

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-bindcluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindclusters,verbs=create;update,versions=v1alpha1,name=mbindcluster.bind.unkin.net,admissionReviewVersions=v1,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-bind-unkin-net-v1alpha1-bindcluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindclusters,verbs=create;update,versions=v1alpha1,name=vbindcluster.bind.unkin.net,admissionReviewVersions=v1,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// BindClusterWebhook defaults and validates BindClusters.
type BindClusterWebhook struct {
	Reader            client.Reader
	Engine            *PolicyEngine
	DefaultImage      string
	DefaultAgentImage string
	PodNetwork        podNetworkSource
}

var (
	_ admission.Defaulter[*v1alpha1.BindCluster] = &BindClusterWebhook{}
	_ admission.Validator[*v1alpha1.BindCluster] = &BindClusterWebhook{}
)

// reservedLabelPrefix is this API group's prefix: labels and annotations
// under it belong to the operator.
const reservedLabelPrefix = "bind.unkin.net/"

// Default fills every default (BindCluster.SetDefaults) so that the stored
// object says exactly what runs, and canonicalises addresses and option
// text; the controllers never guess.
func (w *BindClusterWebhook) Default(_ context.Context, c *v1alpha1.BindCluster) error {
	c.SetDefaults(w.DefaultImage, w.DefaultAgentImage)
	s := &c.Spec
	if r := s.Recursion; r != nil {
		defaultAddressList(r.AllowRecursion)
		defaultForwarders(r.Forwarders)
	}
	defaultAddressList(s.AllowQuery)
	for i := range s.ExtraOptions {
		s.ExtraOptions[i] = strings.TrimSpace(s.ExtraOptions[i])
	}
	return nil
}

// ValidateCreate validates a new cluster.
func (w *BindClusterWebhook) ValidateCreate(ctx context.Context, c *v1alpha1.BindCluster) (admission.Warnings, error) {
	return w.validate(ctx, nil, c)
}

// ValidateUpdate validates a change.
func (w *BindClusterWebhook) ValidateUpdate(ctx context.Context, oldC, newC *v1alpha1.BindCluster) (admission.Warnings, error) {
	return w.validate(ctx, oldC, newC)
}

// ValidateDelete allows every deletion; finalizers handle cleanup.
func (w *BindClusterWebhook) ValidateDelete(context.Context, *v1alpha1.BindCluster) (admission.Warnings, error) {
	return nil, nil
}

func (w *BindClusterWebhook) validate(ctx context.Context, oldC, c *v1alpha1.BindCluster) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	var warns admission.Warnings
	errs := ValidateBindClusterSpec(&c.Spec, spec)
	if oldC != nil {
		errs = append(errs, immutable(string(oldC.Spec.Mode), string(c.Spec.Mode), spec.Child("mode"), "create a new BindCluster with the other mode instead")...)
	}
	sts, optErrs := ValidateExtraOptions(c.Spec.ExtraOptions, spec.Child("extraOptions"))
	errs = append(errs, optErrs...)
	if len(sts) > 0 && w.Engine != nil {
		net := w.PodNetwork.get(ctx, &warns)
		errs = append(errs, w.Engine.Evaluate(sts, net, spec.Child("extraOptions"))...)
	}
	f := refs{r: w.Reader, ns: namespaceOf(ctx, c.Namespace)}
	if c.Spec.TransferKeyRef != nil {
		f.expect(ctx, "spec.transferKeyRef", "BindTSIGKey", c.Spec.TransferKeyRef.Name, &v1alpha1.BindTSIGKey{}, &warns)
	}
	f.addressListRefs(ctx, "spec.allowQuery", c.Spec.AllowQuery, &warns)
	if c.Spec.Recursion != nil {
		f.addressListRefs(ctx, "spec.recursion.allowRecursion", c.Spec.Recursion.AllowRecursion, &warns)
	}
	return warns, invalid("BindCluster", c.Name, errs)
}

// ValidateBindClusterSpec checks a cluster spec without other objects.
// extraOptions are checked by ValidateExtraOptions and the policy engine.
func ValidateBindClusterSpec(s *v1alpha1.BindClusterSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Replicas != nil && (*s.Replicas < 1 || *s.Replicas > 15) {
		errs = append(errs, field.Invalid(fldPath.Child("replicas"), *s.Replicas, "must be between 1 and 15: one primary and up to 14 secondaries"))
	}
	if strings.TrimSpace(s.Image) == "" {
		errs = append(errs, field.Required(fldPath.Child("image"), "set a BIND 9.18 image, e.g. "+v1alpha1.DefaultBindImage))
	} else if strings.ContainsAny(s.Image, " \t\n") {
		errs = append(errs, field.Invalid(fldPath.Child("image"), s.Image, "an image reference has no whitespace, e.g. "+v1alpha1.DefaultBindImage))
	}
	ports := fldPath.Child("ports")
	p := s.Ports
	if p.DNS != 0 && (p.DNS == p.Agent || p.DNS == p.Metrics) {
		errs = append(errs, field.Invalid(ports.Child("dns"), p.DNS, "must differ from the agent and metrics ports; each listener needs its own port"))
	}
	if p.Agent != 0 && p.Agent == p.Metrics {
		errs = append(errs, field.Invalid(ports.Child("metrics"), p.Metrics, "must differ from the agent port; each listener needs its own port"))
	}
	for k := range s.PodAnnotations {
		if strings.HasPrefix(k, reservedLabelPrefix) {
			errs = append(errs, field.Invalid(fldPath.Child("podAnnotations").Key(k), k, fmt.Sprintf("annotations under %s are reserved for the operator (e.g. %s); use another prefix", reservedLabelPrefix, v1alpha1.AnnotationConfigHash)))
		}
	}
	for _, svc := range []struct {
		name string
		s    v1alpha1.ServiceSpec
	}{{"primaryService", s.PrimaryService}, {"queryService", s.QueryService}} {
		for k := range svc.s.Labels {
			if k == v1alpha1.LabelManagedBy || strings.HasPrefix(k, reservedLabelPrefix) {
				errs = append(errs, field.Invalid(fldPath.Child(svc.name, "labels").Key(k), k, "this label is reserved for the operator, which selects its Services by it; use another key"))
			}
		}
	}
	if s.Storage != nil && s.Storage.Size != nil && s.Storage.Size.Sign() <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("storage", "size"), s.Storage.Size.String(), "must be a positive quantity such as 1Gi"))
	}
	errs = append(errs, ValidateAddressMatchList(s.AllowQuery, fldPath.Child("allowQuery"))...)
	if r := s.Recursion; r != nil {
		rp := fldPath.Child("recursion")
		errs = append(errs, ValidateAddressMatchList(r.AllowRecursion, rp.Child("allowRecursion"))...)
		errs = append(errs, ValidateForwarders(r.Forwarders, rp.Child("forwarders"))...)
		if r.ForwardPolicy == v1alpha1.ForwardOnly && len(r.Forwarders) == 0 {
			errs = append(errs, field.Invalid(rp.Child("forwardPolicy"), r.ForwardPolicy, "forwardPolicy Only needs at least one forwarder; add forwarders or use First"))
		}
	}
	return errs
}

func ptr[T any](v T) *T { return &v }
