package webhooks

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// AllowAnyImage, as the only allowed prefix, turns the image check off.
const AllowAnyImage = "*"

// DefaultAllowedImages are the prefixes a BindCluster's images must start
// with when the operator is given none: the repositories of its BIND and
// agent images, at any tag or digest. A BindCluster runs pods from its
// images with the cluster's TSIG keys and control key mounted, so creating
// one is creating pods; which images may run is the operator
// administrator's choice (manager flag --allowed-images), not the tenant's.
func DefaultAllowedImages(bindImage, agentImage string) []string {
	var out []string
	for _, img := range []string{bindImage, agentImage} {
		if img == "" {
			continue
		}
		repo := imageRepository(img)
		out = append(out, repo+":", repo+"@")
	}
	return out
}

// imageRepository strips the tag or digest from an image reference: what
// follows the last ':' after the last '/', or the '@' and what follows.
func imageRepository(img string) string {
	if i := strings.Index(img, "@"); i >= 0 {
		img = img[:i]
	}
	if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
		img = img[:i]
	}
	return img
}

// ValidateImages refuses spec.image and spec.agentImage outside the
// allowed prefixes. An image an update leaves unchanged is not checked
// again: narrowing the list must not freeze running clusters.
func ValidateImages(old, s *v1alpha1.BindClusterSpec, allowed []string, fldPath *field.Path) field.ErrorList {
	if len(allowed) == 0 || (len(allowed) == 1 && allowed[0] == AllowAnyImage) {
		return nil
	}
	var was v1alpha1.BindClusterSpec
	if old != nil {
		was = *old
	}
	var errs field.ErrorList
	for _, img := range []struct{ name, cur, was string }{
		{"image", s.Image, was.Image},
		{"agentImage", s.AgentImage, was.AgentImage},
	} {
		if img.cur == "" || img.cur == img.was || imageAllowed(img.cur, allowed) {
			continue
		}
		errs = append(errs, field.Forbidden(fldPath.Child(img.name), fmt.Sprintf(
			"image %q is not allowed here: the operator runs only images starting with %s (its --allowed-images flag), because the pods mount the cluster's keys; use one of those or ask the operator's administrator to allow this one",
			img.cur, strings.Join(quoteAll(allowed), ", "))))
	}
	return errs
}

func imageAllowed(img string, allowed []string) bool {
	for _, p := range allowed {
		if p == AllowAnyImage || strings.HasPrefix(img, p) {
			return true
		}
	}
	return false
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
