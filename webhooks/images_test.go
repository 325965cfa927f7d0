package webhooks

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/imagepolicy"
)

func TestValidateImages(t *testing.T) {
	allowed := imagepolicy.DefaultAllowed("git.unkin.net/unkin/bind-operator-bind9:v0.1.0", "git.unkin.net/unkin/bind-operator:v0.1.0")
	const prefixes = `"git.unkin.net/unkin/bind-operator-bind9:", "git.unkin.net/unkin/bind-operator-bind9@", "git.unkin.net/unkin/bind-operator:", "git.unkin.net/unkin/bind-operator@"`
	forbidden := func(path, img string) *field.Error {
		return field.Forbidden(spec.Child(path), `image "`+img+`" is not allowed here: the operator runs only images starting with `+prefixes+` (its --allowed-images flag), because the pods mount the cluster's keys; use one of those, or remove the field to run the operator's default, or ask the operator's administrator to allow this one`)
	}
	kept := func(path, img string) string {
		return `spec.` + path + `: image "` + img + `" is no longer allowed (the operator runs only images starting with ` + prefixes + `, its --allowed-images flag), so the operator keeps this cluster's pods as they are and rolls no change; set spec.` + path + ` to an allowed image, or remove it to run the operator's default, or ask the operator's administrator to allow this one`
	}
	s := func(image, agent string) *v1alpha1.BindClusterSpec {
		return &v1alpha1.BindClusterSpec{Image: image, AgentImage: agent}
	}
	for _, tc := range []struct {
		name      string
		old, cur  *v1alpha1.BindClusterSpec
		allowed   []string
		want      field.ErrorList
		wantWarns admission.Warnings
	}{
		{"operator defaults", nil, s("", ""), allowed, nil, nil},
		{"another tag and a digest", nil, s("git.unkin.net/unkin/bind-operator-bind9:v0.0.9", "git.unkin.net/unkin/bind-operator@sha256:0123"), allowed, nil, nil},
		{"a lookalike repository", nil, s("git.unkin.net/unkin/bind-operator-bind9-evil:v0.1.0", ""), allowed,
			field.ErrorList{forbidden("image", "git.unkin.net/unkin/bind-operator-bind9-evil:v0.1.0")}, nil},
		{"both foreign", nil, s("evil.example/bind:1", "evil.example/agent:1"), allowed,
			field.ErrorList{forbidden("image", "evil.example/bind:1"), forbidden("agentImage", "evil.example/agent:1")}, nil},
		{"unchanged on update", s("evil.example/bind:1", ""), s("evil.example/bind:1", ""), allowed, nil,
			admission.Warnings{kept("image", "evil.example/bind:1")}},
		{"agent unchanged, image changed", s("evil.example/bind:1", "evil.example/agent:1"), s("evil.example/bind:2", "evil.example/agent:1"), allowed,
			field.ErrorList{forbidden("image", "evil.example/bind:2")}, admission.Warnings{kept("agentImage", "evil.example/agent:1")}},
		{"removed on update", s("evil.example/bind:1", ""), s("", ""), allowed, nil, nil},
		{"any image", nil, s("evil.example/bind:1", ""), []string{imagepolicy.AllowAny}, nil, nil},
		{"no list", nil, s("evil.example/bind:1", ""), nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, warns := ValidateImages(tc.old, tc.cur, tc.allowed, spec)
			expectErrors(t, errs, tc.want)
			NewWithT(t).Expect(warns).To(Equal(tc.wantWarns))
		})
	}
}
