package webhooks

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
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

// Defaults of a BindCluster that the CRD does not fill (or fills only when
// the parent object is present).
const (
	defaultReplicas     int32 = 3
	defaultDNSPort      int32 = 53
	defaultAgentPort    int32 = 8453
	defaultMetricsPort  int32 = 9119
	defaultNotifyRate   int32 = 1000
	defaultSerialQRate  int32 = 1000
	defaultStorageSize        = "1Gi"
	reservedLabelPrefix       = "bind.unkin.net/"
)

// Default fills every default so that the stored object says exactly what
// runs; the controllers never guess.
func (w *BindClusterWebhook) Default(_ context.Context, c *v1alpha1.BindCluster) error {
	DefaultBindClusterSpec(&c.Spec, w.DefaultImage, w.DefaultAgentImage)
	return nil
}

// DefaultBindClusterSpec fills the defaults of a cluster spec.
func DefaultBindClusterSpec(s *v1alpha1.BindClusterSpec, image, agentImage string) {
	if s.Mode == "" {
		s.Mode = v1alpha1.ModeAuthoritative
	}
	if s.Replicas == nil {
		s.Replicas = ptr(defaultReplicas)
	}
	if s.Image == "" {
		s.Image = image
	}
	if s.AgentImage == "" && agentImage != "" {
		s.AgentImage = agentImage
	}
	if s.ImagePullPolicy == "" {
		s.ImagePullPolicy = "IfNotPresent"
	}
	if s.Ports.DNS == 0 {
		s.Ports.DNS = defaultDNSPort
	}
	if s.Ports.Agent == 0 {
		s.Ports.Agent = defaultAgentPort
	}
	if s.Ports.Metrics == 0 {
		s.Ports.Metrics = defaultMetricsPort
	}
	if s.PrimaryService.Type == "" {
		s.PrimaryService.Type = "ClusterIP"
	}
	if s.QueryService.Type == "" {
		s.QueryService.Type = "ClusterIP"
	}
	t := &s.Tuning
	if t.NotifyDelay == nil {
		t.NotifyDelay = ptr(int32(0))
	}
	if t.NotifyRate == nil {
		t.NotifyRate = ptr(defaultNotifyRate)
	}
	if t.StartupNotifyRate == nil {
		t.StartupNotifyRate = ptr(defaultNotifyRate)
	}
	if t.SerialQueryRate == nil {
		t.SerialQueryRate = ptr(defaultSerialQRate)
	}
	if t.CatalogMinUpdateInterval == nil {
		t.CatalogMinUpdateInterval = ptr(int32(0))
	}
	if s.Storage == nil {
		s.Storage = &v1alpha1.StorageSpec{}
	}
	if s.Storage.Enabled == nil {
		s.Storage.Enabled = ptr(true)
	}
	if *s.Storage.Enabled && s.Storage.Size == nil {
		q := resource.MustParse(defaultStorageSize)
		s.Storage.Size = &q
	}
	if s.Mode == v1alpha1.ModeResolver {
		if s.Recursion == nil {
			s.Recursion = &v1alpha1.RecursionSpec{}
		}
		if s.Recursion.ForwardPolicy == "" {
			s.Recursion.ForwardPolicy = v1alpha1.ForwardFirst
		}
		if s.Recursion.DNSSECValidation == "" {
			s.Recursion.DNSSECValidation = "Auto"
		}
		defaultAddressList(s.Recursion.AllowRecursion)
		defaultForwarders(s.Recursion.Forwarders)
	}
	defaultAddressList(s.AllowQuery)
	for i := range s.ExtraOptions {
		s.ExtraOptions[i] = strings.TrimSpace(s.ExtraOptions[i])
	}
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
		errs = append(errs, field.Required(fldPath.Child("image"), "set a BIND 9.18 image, e.g. "+DefaultBindImage))
	} else if strings.ContainsAny(s.Image, " \t\n") {
		errs = append(errs, field.Invalid(fldPath.Child("image"), s.Image, "an image reference has no whitespace, e.g. "+DefaultBindImage))
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
