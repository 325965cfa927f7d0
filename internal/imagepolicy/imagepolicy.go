// Package imagepolicy decides which images a BindCluster may run. A
// BindCluster's pods mount its TSIG keys, its rndc control key and the
// agent's certificate, so creating one is creating pods with those
// secrets: which images may run is the operator administrator's choice
// (manager flag --allowed-images), not the tenant's.
//
// Two places ask, with the same answer: the validating webhook, which
// refuses a new or changed image outside the list, and the BindCluster
// controller, which does not roll a cluster whose pinned image left the
// list after it was admitted (the list was narrowed, or an operator
// upgrade moved the default repositories).
package imagepolicy

import (
	"fmt"
	"strings"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// AllowAny, as the only allowed prefix, turns the check off.
const AllowAny = "*"

// DefaultAllowed are the prefixes a BindCluster's images must start with
// when the operator is given none: the repositories of its default BIND
// and agent images, at any tag or digest, so a cluster may pin another
// release of the operator's own images and nothing else.
func DefaultAllowed(bindImage, agentImage string) []string {
	var out []string
	for _, img := range []string{bindImage, agentImage} {
		if img == "" {
			continue
		}
		repo := repository(img)
		out = append(out, repo+":", repo+"@")
	}
	return out
}

// repository strips the tag or digest from an image reference: what
// follows the last ':' after the last '/', or the '@' and what follows.
func repository(img string) string {
	if i := strings.Index(img, "@"); i >= 0 {
		img = img[:i]
	}
	if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
		img = img[:i]
	}
	return img
}

// Allowed tells whether img starts with one of the allowed prefixes. An
// empty list, or one holding AllowAny, allows every image.
func Allowed(img string, allowed []string) bool {
	if len(allowed) == 0 {
		return true
	}
	for _, p := range allowed {
		if p == AllowAny || strings.HasPrefix(img, p) {
			return true
		}
	}
	return false
}

// Violation is an image a BindCluster pins (spec.image or
// spec.agentImage) outside the allowed prefixes.
type Violation struct {
	// Field is the spec field that pins it: "image" or "agentImage".
	Field string
	// Image is the pinned image.
	Image string
}

// Violations are the images s pins outside allowed, spec.image first. An
// empty field is the operator's default image, the administrator's own
// choice, and is never one.
func Violations(s *v1alpha1.BindClusterSpec, allowed []string) []Violation {
	var out []Violation
	for _, v := range []Violation{{"image", s.Image}, {"agentImage", s.AgentImage}} {
		if v.Image != "" && !Allowed(v.Image, allowed) {
			out = append(out, v)
		}
	}
	return out
}

// Prefixes is the allowed list as a message names it: each prefix quoted,
// comma separated.
func Prefixes(allowed []string) string {
	q := make([]string, len(allowed))
	for i, p := range allowed {
		q[i] = fmt.Sprintf("%q", p)
	}
	return strings.Join(q, ", ")
}
