package webhooks

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/imagepolicy"
)

// ValidateImages refuses spec.image and spec.agentImage outside the
// allowed prefixes (package imagepolicy decides; the BindCluster
// controller asks it too). An image an update leaves unchanged is not
// refused again: narrowing the list must not make the cluster's other
// fields uneditable. It is warned about instead, because the controller
// does not roll a cluster that pins such an image.
func ValidateImages(old, s *v1alpha1.BindClusterSpec, allowed []string, fldPath *field.Path) (field.ErrorList, admission.Warnings) {
	var was v1alpha1.BindClusterSpec
	if old != nil {
		was = *old
	}
	var errs field.ErrorList
	var warns admission.Warnings
	for _, v := range imagepolicy.Violations(s, allowed) {
		p := fldPath.Child(v.Field)
		if v.Field == "image" && v.Image == was.Image || v.Field == "agentImage" && v.Image == was.AgentImage {
			warns = append(warns, fmt.Sprintf(
				"%s: image %q is no longer allowed (the operator runs only images starting with %s, its --allowed-images flag), so the operator keeps this cluster's pods as they are and rolls no change; set %s to an allowed image, or remove it to run the operator's default, or ask the operator's administrator to allow this one",
				p, v.Image, imagepolicy.Prefixes(allowed), p))
			continue
		}
		errs = append(errs, field.Forbidden(p, fmt.Sprintf(
			"image %q is not allowed here: the operator runs only images starting with %s (its --allowed-images flag), because the pods mount the cluster's keys; use one of those, or remove the field to run the operator's default, or ask the operator's administrator to allow this one",
			v.Image, imagepolicy.Prefixes(allowed))))
	}
	return errs, warns
}
