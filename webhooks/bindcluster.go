package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-bindcluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindclusters,verbs=create;update,versions=v1alpha1,name=mbindcluster.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-bind-unkin-net-v1alpha1-bindcluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindclusters,verbs=create;update,versions=v1alpha1,name=vbindcluster.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// BindClusterWebhook defaults and validates BindClusters.
type BindClusterWebhook struct {
	Reader client.Reader
	Engine *PolicyEngine
	// AllowedImages are the prefixes spec.image and spec.agentImage must
	// start with (ValidateImages); empty or imagepolicy.AllowAny: any
	// image.
	AllowedImages []string
	PodNetwork    podNetworkSource
	// Checker runs named-checkconf on the candidate render; nil skips it.
	Checker *ConfigChecker
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
// text; the controllers never guess. The images are the exception: left
// empty, they are the operator's current defaults, which follow its
// release (SetDefaults).
func (w *BindClusterWebhook) Default(ctx context.Context, c *v1alpha1.BindCluster) error {
	zeroPorts := explicitZeroPorts(ctx)
	c.SetDefaults()
	// A port written as 0 is not "unset": keep it for the CRD's 1–65535
	// bound to refuse, rather than default it to a port the user did not
	// ask for.
	for _, p := range zeroPorts {
		*p.of(&c.Spec.Ports) = 0
	}
	s := &c.Spec
	if r := s.Recursion; r != nil {
		defaultAddressList(r.AllowRecursion)
		defaultForwarders(r.Forwarders)
	}
	defaultAddressList(s.AllowQuery)
	for i := range s.ExtraOptions {
		// One statement, one line: named.conf holds each item on a line.
		s.ExtraOptions[i] = strings.TrimSpace(oneLine.Replace(s.ExtraOptions[i]))
	}
	return nil
}

type clusterPort struct {
	name string
	of   func(*v1alpha1.ClusterPorts) *int32
}

var clusterPorts = []clusterPort{
	{"dns", func(p *v1alpha1.ClusterPorts) *int32 { return &p.DNS }},
	{"agent", func(p *v1alpha1.ClusterPorts) *int32 { return &p.Agent }},
	{"metrics", func(p *v1alpha1.ClusterPorts) *int32 { return &p.Metrics }},
}

// explicitZeroPorts are the spec.ports fields the request writes as 0,
// which the decoded object cannot tell from unset ones.
func explicitZeroPorts(ctx context.Context) []clusterPort {
	req, err := admission.RequestFromContext(ctx)
	if err != nil || len(req.Object.Raw) == 0 {
		return nil
	}
	var raw struct {
		Spec struct {
			Ports map[string]*json.Number `json:"ports"`
		} `json:"spec"`
	}
	if json.Unmarshal(req.Object.Raw, &raw) != nil {
		return nil
	}
	var out []clusterPort
	for _, p := range clusterPorts {
		if n := raw.Spec.Ports[p.name]; n != nil {
			if f, err := n.Float64(); err == nil && f == 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

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

func (w *BindClusterWebhook) validate(ctx context.Context, old, c *v1alpha1.BindCluster) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	var warns admission.Warnings
	errs := ValidateBindClusterSpec(&c.Spec, spec)
	warns = append(warns, memoryVolumeWarnings(&c.Spec)...)
	if r := c.Spec.Recursion; r != nil {
		errs = append(errs, ValidateForwarderTargets(r.Forwarders, c.Name, spec.Child("recursion", "forwarders"))...)
	}
	var oldSpec *v1alpha1.BindClusterSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	imgErrs, imgWarns := ValidateImages(oldSpec, &c.Spec, w.AllowedImages, spec)
	errs = append(errs, imgErrs...)
	warns = append(warns, imgWarns...)
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
	// named-checkconf last, on an otherwise valid spec, and only when what
	// reaches named.conf changed.
	if len(errs) == 0 && RenderChanged(old, c) {
		errs = append(errs, w.Checker.Check(ctx, c, &warns)...)
	}
	return warns, invalid("BindCluster", c.Name, errs)
}

// ValidateBindClusterSpec checks a cluster spec without other objects,
// where the CRD cannot: keys reserved for the operator (the CRD could not
// name the offending key in the path), the storage quantity, address
// lists and forwarders. extraOptions are checked by ValidateExtraOptions
// and the policy engine.
func ValidateBindClusterSpec(s *v1alpha1.BindClusterSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Sorted keys: the same object always gets the same errors.
	for _, k := range slices.Sorted(maps.Keys(s.PodAnnotations)) {
		if strings.HasPrefix(k, reservedLabelPrefix) {
			errs = append(errs, field.Invalid(fldPath.Child("podAnnotations").Key(k), k, fmt.Sprintf("annotations under %s are reserved for the operator (e.g. %s); use another prefix", reservedLabelPrefix, v1alpha1.AnnotationConfigHash)))
		}
	}
	for _, svc := range []struct {
		name string
		s    v1alpha1.ServiceSpec
	}{{"primaryService", s.PrimaryService}, {"queryService", s.QueryService}} {
		for _, k := range slices.Sorted(maps.Keys(svc.s.Labels)) {
			if k == v1alpha1.LabelManagedBy || strings.HasPrefix(k, reservedLabelPrefix) {
				errs = append(errs, field.Invalid(fldPath.Child(svc.name, "labels").Key(k), k, "this label is reserved for the operator, which selects its Services by it; use another key"))
			}
		}
	}
	errs = append(errs, validateNodeSelector(s.NodeSelector, fldPath.Child("nodeSelector"))...)
	if st := s.Storage; st != nil {
		errs = append(errs, validatePositiveQuantity(st.Size, fldPath.Child("storage", "size"), "1Gi")...)
		errs = append(errs, validatePositiveQuantity(st.SizeLimit, fldPath.Child("storage", "sizeLimit"), "256Mi")...)
	}
	errs = append(errs, ValidateAddressMatchList(s.AllowQuery, fldPath.Child("allowQuery"))...)
	if r := s.Recursion; r != nil {
		rp := fldPath.Child("recursion")
		errs = append(errs, ValidateAddressMatchList(r.AllowRecursion, rp.Child("allowRecursion"))...)
		errs = append(errs, ValidateServers(r.Forwarders, rp.Child("forwarders"))...)
	}
	return errs
}

// memoryVolumeWarnings: the files of a Memory data volume are a tmpfs's
// pages, charged to the memory of the container that writes them (named),
// and the kubelet sizes the tmpfs to sizeLimit or else to the node's
// memory (the pod's, when every container has a limit). A volume that
// fills past named's memory limit gets named OOM-killed, not ENOSPC.
// Warnings, not errors: a cluster without limits is the user's choice.
func memoryVolumeWarnings(s *v1alpha1.BindClusterSpec) admission.Warnings {
	st := s.Storage
	if st == nil || st.Medium != v1alpha1.StorageMediumMemory {
		return nil
	}
	limit := s.Resources.Limits.Memory()
	switch {
	case st.SizeLimit == nil:
		return admission.Warnings{"spec.storage.sizeLimit: a Memory data volume without a size limit may grow to the node's memory, and its files count against named's; set sizeLimit below named's memory limit (spec.resources.limits.memory)"}
	case !limit.IsZero() && st.SizeLimit.Cmp(*limit) >= 0:
		return admission.Warnings{fmt.Sprintf("spec.storage.sizeLimit: %s is not below named's memory limit %s, and the volume's files count against named's memory, so a full volume gets named OOM-killed; set sizeLimit below the limit, leaving room for named itself", st.SizeLimit, limit)}
	}
	return nil
}

// validatePositiveQuantity: a volume of zero or negative size is refused
// by the API server or the kubelet long after apply.
func validatePositiveQuantity(q *resource.Quantity, fldPath *field.Path, example string) field.ErrorList {
	if q == nil || q.Sign() > 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, q.String(), "must be a positive quantity such as "+example)}
}

// validateNodeSelector: keys must be label keys and values label values,
// or the StatefulSet the controller creates is refused long after apply.
func validateNodeSelector(sel map[string]string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		p := fldPath.Key(k)
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, k, fmt.Sprintf("%q is not a label key (%s); use the key of a node label, e.g. kubernetes.io/os or topology.kubernetes.io/zone", k, strings.Join(msgs, "; "))))
		}
		if msgs := validation.IsValidLabelValue(sel[k]); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, sel[k], fmt.Sprintf("%q is not a label value (%s); use the value of a node label, e.g. linux", sel[k], strings.Join(msgs, "; "))))
		}
	}
	return errs
}
