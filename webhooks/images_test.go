package webhooks

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestDefaultAllowedImages(t *testing.T) {
	NewWithT(t).Expect(DefaultAllowedImages("docker.io/internetsystemsconsortium/bind9:9.18", "registry.local:5000/ops/bind-operator@sha256:abc")).To(Equal([]string{
		"docker.io/internetsystemsconsortium/bind9:", "docker.io/internetsystemsconsortium/bind9@",
		"registry.local:5000/ops/bind-operator:", "registry.local:5000/ops/bind-operator@",
	}))
	NewWithT(t).Expect(DefaultAllowedImages("localhost:5000/bind", "")).To(Equal([]string{"localhost:5000/bind:", "localhost:5000/bind@"}))
}

func TestValidateImages(t *testing.T) {
	allowed := DefaultAllowedImages(v1alpha1.DefaultBindImage, "git.unkin.net/unkin/bind-operator:latest")
	const msg = `the operator runs only images starting with "docker.io/internetsystemsconsortium/bind9:", "docker.io/internetsystemsconsortium/bind9@", "git.unkin.net/unkin/bind-operator:", "git.unkin.net/unkin/bind-operator@" (its --allowed-images flag), because the pods mount the cluster's keys; use one of those or ask the operator's administrator to allow this one`
	forbidden := func(path, img string) *field.Error {
		return field.Forbidden(spec.Child(path), `image "`+img+`" is not allowed here: `+msg)
	}
	s := func(image, agent string) *v1alpha1.BindClusterSpec {
		return &v1alpha1.BindClusterSpec{Image: image, AgentImage: agent}
	}
	for _, tc := range []struct {
		name     string
		old, cur *v1alpha1.BindClusterSpec
		allowed  []string
		want     field.ErrorList
	}{
		{"defaults", nil, s(v1alpha1.DefaultBindImage, ""), allowed, nil},
		{"another tag and a digest", nil, s("docker.io/internetsystemsconsortium/bind9:9.18.30", "git.unkin.net/unkin/bind-operator@sha256:0123"), allowed, nil},
		{"a lookalike repository", nil, s("docker.io/internetsystemsconsortium/bind9-evil:9.18", ""), allowed,
			field.ErrorList{forbidden("image", "docker.io/internetsystemsconsortium/bind9-evil:9.18")}},
		{"both foreign", nil, s("evil.example/bind:1", "evil.example/agent:1"), allowed,
			field.ErrorList{forbidden("image", "evil.example/bind:1"), forbidden("agentImage", "evil.example/agent:1")}},
		{"unchanged on update", s("evil.example/bind:1", ""), s("evil.example/bind:1", ""), allowed, nil},
		{"changed on update", s("evil.example/bind:1", ""), s("evil.example/bind:2", ""), allowed,
			field.ErrorList{forbidden("image", "evil.example/bind:2")}},
		{"any image", nil, s("evil.example/bind:1", ""), []string{AllowAnyImage}, nil},
		{"no list", nil, s("evil.example/bind:1", ""), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateImages(tc.old, tc.cur, tc.allowed, spec), tc.want)
		})
	}
}
