package webhooks

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// +kubebuilder:webhook:path=/mutate-bind-unkin-net-v1alpha1-bindtsigkey,mutating=true,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindtsigkeys,verbs=create;update,versions=v1alpha1,name=mbindtsigkey.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`
// +kubebuilder:webhook:path=/validate-bind-unkin-net-v1alpha1-bindtsigkey,mutating=false,failurePolicy=fail,sideEffects=None,groups=bind.unkin.net,resources=bindtsigkeys,verbs=create;update,versions=v1alpha1,name=vbindtsigkey.bind.unkin.net,admissionReviewVersions=v1,timeoutSeconds=10,matchPolicy=Equivalent,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"}]}`

// BindTSIGKeyWebhook defaults and validates BindTSIGKeys.
type BindTSIGKeyWebhook struct {
	Reader client.Reader
	// Access says whether the requesting user may read the Secret that
	// spec.secretName names. Nil: no check (in-process tests);
	// SetupWithManager always sets it.
	Access SecretAccess
}

var (
	_ admission.Defaulter[*v1alpha1.BindTSIGKey] = &BindTSIGKeyWebhook{}
	_ admission.Validator[*v1alpha1.BindTSIGKey] = &BindTSIGKeyWebhook{}
)

// Default fills keyName, algorithm and secretName (BindTSIGKey.SetDefaults),
// canonicalises keyName (lowercase, no trailing dot: on the wire TSIG names
// compare case-insensitively), and drops empty template maps, then an
// empty template, so that "secretTemplate: {}" and no template are one
// stored form.
func (w *BindTSIGKeyWebhook) Default(_ context.Context, k *v1alpha1.BindTSIGKey) error {
	k.SetDefaults()
	s := &k.Spec
	s.KeyName = v1alpha1.DomainName(records.CanonicalZone(string(s.KeyName)))
	if t := s.SecretTemplate; t != nil {
		if len(t.Labels) == 0 {
			t.Labels = nil
		}
		if len(t.Annotations) == 0 {
			t.Annotations = nil
		}
		if t.Labels == nil && t.Annotations == nil {
			s.SecretTemplate = nil
		}
	}
	return nil
}

// ValidateCreate validates a new key.
func (w *BindTSIGKeyWebhook) ValidateCreate(ctx context.Context, k *v1alpha1.BindTSIGKey) (admission.Warnings, error) {
	return w.validate(ctx, nil, k)
}

// ValidateUpdate validates a change.
func (w *BindTSIGKeyWebhook) ValidateUpdate(ctx context.Context, oldK, newK *v1alpha1.BindTSIGKey) (admission.Warnings, error) {
	return w.validate(ctx, oldK, newK)
}

// ValidateDelete allows every deletion.
func (w *BindTSIGKeyWebhook) ValidateDelete(context.Context, *v1alpha1.BindTSIGKey) (admission.Warnings, error) {
	return nil, nil
}

func (w *BindTSIGKeyWebhook) validate(ctx context.Context, oldK, k *v1alpha1.BindTSIGKey) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	errs := ValidateBindTSIGKeySpec(&k.Spec, spec)
	var warns admission.Warnings
	f := refs{r: w.Reader, ns: namespaceOf(ctx, k.Namespace)}
	if k.Spec.SecretName != "" {
		// An imported key is copied into the Secret the BIND pods mount:
		// importing needs the right to read the Secret. And nothing here
		// tells someone without that right whether the Secret exists.
		mayRead, checkErr := w.mayRead(ctx, f.ns, k.Spec.SecretName)
		if importing(oldK, k) && !mayRead {
			msg := fmt.Sprintf("you may not get Secret %q in this namespace, and importing it would copy its key into the BIND pods; have someone who may read it create this BindTSIGKey, or leave importExisting unset so that the operator generates the key", k.Spec.SecretName)
			if checkErr != nil {
				msg = fmt.Sprintf("could not check whether you may get Secret %q (%v), which importing it requires; retry", k.Spec.SecretName, checkErr)
			}
			errs = append(errs, field.Forbidden(spec.Child("secretName"), msg))
		}
		var sec corev1.Secret
		found := mayRead && f.get(ctx, k.Spec.SecretName, &sec, &warns)
		switch {
		case !mayRead:
		case k.Spec.ImportExisting && !found && f.r != nil:
			warns = append(warns, fmt.Sprintf("spec.secretName: Secret %q does not exist yet; an imported key stays not Ready until it does", k.Spec.SecretName))
		case !k.Spec.ImportExisting && found && oldK == nil && sec.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue:
			warns = append(warns, fmt.Sprintf("spec.secretName: Secret %q already exists and was not created by the operator; it will not be overwritten, so set importExisting: true to adopt it", k.Spec.SecretName))
		}
		var keys v1alpha1.BindTSIGKeyList
		if f.list(ctx, &keys, &warns) {
			for _, o := range keys.Items {
				if o.Name != k.Name && o.Spec.SecretName == k.Spec.SecretName {
					errs = append(errs, field.Duplicate(spec.Child("secretName"), fmt.Sprintf("%s (already used by BindTSIGKey %q); each key needs its own Secret", k.Spec.SecretName, o.Name)))
					break
				}
			}
		}
	}
	return warns, invalid("BindTSIGKey", k.Name, errs)
}

// importing reports whether this request starts an import: only a new key
// can, since the CRD keeps importExisting and secretName immutable.
func importing(oldK, k *v1alpha1.BindTSIGKey) bool {
	return oldK == nil && k.Spec.ImportExisting
}

// mayRead asks Access whether the requesting user may get Secret name in
// namespace ns. Without Access everyone may; without a request in ctx
// (a call from outside the webhook server) no one may.
func (w *BindTSIGKeyWebhook) mayRead(ctx context.Context, ns, name string) (bool, error) {
	if w.Access == nil {
		return true, nil
	}
	user, ok := requester(ctx)
	if !ok {
		return false, nil
	}
	return w.Access.CanReadSecret(ctx, user, ns, name)
}

// ValidateBindTSIGKeySpec checks a key spec without other objects, where
// the CRD cannot: reserved key names (v1alpha1.ReservedTSIGKeyNames) and
// the template's label and annotation syntax and reserved prefix, each at
// the offending key's path.
func ValidateBindTSIGKeySpec(s *v1alpha1.BindTSIGKeySpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	kn := string(s.KeyName)
	if why, ok := v1alpha1.ReservedTSIGKeyNames[kn]; ok {
		errs = append(errs, field.Invalid(fldPath.Child("keyName"), s.KeyName, fmt.Sprintf("%q is reserved (%s); choose another keyName", kn, why)))
	}
	for _, prefix := range slices.Sorted(maps.Keys(v1alpha1.ReservedTSIGKeyPrefixes)) {
		if strings.HasPrefix(strings.ToLower(kn), prefix) {
			errs = append(errs, field.Invalid(fldPath.Child("keyName"), s.KeyName, fmt.Sprintf("key names starting with %q are reserved (%s); choose another keyName", prefix, v1alpha1.ReservedTSIGKeyPrefixes[prefix])))
		}
	}
	if t := s.SecretTemplate; t != nil {
		tp := fldPath.Child("secretTemplate")
		// Sorted keys: the same object always gets the same errors.
		for _, k := range slices.Sorted(maps.Keys(t.Labels)) {
			v := t.Labels[k]
			p := tp.Child("labels").Key(k)
			for _, m := range validation.IsQualifiedName(k) {
				errs = append(errs, field.Invalid(p, k, "label key: "+m))
			}
			for _, m := range validation.IsValidLabelValue(v) {
				errs = append(errs, field.Invalid(p, v, "label value: "+m))
			}
			// The CRD reserves app.kubernetes.io/managed-by.
			if strings.HasPrefix(k, reservedLabelPrefix) {
				errs = append(errs, field.Invalid(p, k, "this label is reserved for the operator, whose own labels always win; use another key"))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(t.Annotations)) {
			for _, m := range validation.IsQualifiedName(k) {
				errs = append(errs, field.Invalid(tp.Child("annotations").Key(k), k, "annotation key: "+m))
			}
		}
	}
	return errs
}
