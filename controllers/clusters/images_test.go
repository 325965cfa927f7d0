package clusters

import (
	"testing"

	. "github.com/onsi/gomega"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/imagepolicy"
	"git.unkin.net/unkin/bind-operator/internal/version"
	"git.unkin.net/unkin/bind-operator/render"
)

// TestClusterImages: a cluster that pins no image runs the operator's
// defaults, which are the release's when the manager names none; pins
// are kept; the pod template carries what runs.
func TestClusterImages(t *testing.T) {
	pinned := &bindv1alpha1.BindCluster{Spec: bindv1alpha1.BindClusterSpec{Image: "registry.example/bind9:9.18.30", AgentImage: "registry.example/bind-operator:v1"}}
	for _, tc := range []struct {
		name        string
		opts        ClusterOptions
		cluster     *bindv1alpha1.BindCluster
		bind, agent string
	}{
		{"release defaults", ClusterOptions{}, &bindv1alpha1.BindCluster{}, version.BindImage(), version.OperatorImage()},
		{"manager flags", ClusterOptions{BindImage: "mirror.example/bind9:1", AgentImage: "mirror.example/op:1"}, &bindv1alpha1.BindCluster{}, "mirror.example/bind9:1", "mirror.example/op:1"},
		{"pinned", ClusterOptions{BindImage: "mirror.example/bind9:1"}, pinned, "registry.example/bind9:9.18.30", "registry.example/bind-operator:v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			sts := buildStatefulSet(tc.cluster, tc.opts, render.DefaultPaths(), "hash")
			bind, agent := templateImages(sts)
			g.Expect([]string{bind, agent}).To(Equal([]string{tc.bind, tc.agent}))
		})
	}
}

// TestAllowedImagesDefault: with no list the controller allows what the
// webhook does by default, the repositories of the default images.
func TestAllowedImagesDefault(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ClusterOptions{}.allowedImages()).To(Equal(imagepolicy.DefaultAllowed(version.BindImage(), version.OperatorImage())))
	g.Expect(ClusterOptions{BindImage: "a.example/bind:1", AgentImage: "a.example/op:1"}.allowedImages()).To(Equal([]string{"a.example/bind:", "a.example/bind@", "a.example/op:", "a.example/op@"}))
	g.Expect(ClusterOptions{AllowedImages: []string{imagepolicy.AllowAny}}.allowedImages()).To(Equal([]string{imagepolicy.AllowAny}))
}

func TestImageNotAllowedMessage(t *testing.T) {
	g := NewWithT(t)
	allowed := []string{"a.example/bind:", "a.example/op:"}
	g.Expect(imageNotAllowedMessage([]imagepolicy.Violation{{Field: "image", Image: "evil.example/bind:1"}}, allowed)).To(Equal(
		`spec.image "evil.example/bind:1" is not an image the operator may run: it runs only images starting with "a.example/bind:", "a.example/op:" (its --allowed-images), so the pods keep the images and configuration they run and no change rolls out. Set spec.image to an image under one of those prefixes, or remove it to run the operator's default, or ask the operator's administrator to add it to --allowed-images.`))
	g.Expect(imageNotAllowedMessage([]imagepolicy.Violation{{Field: "image", Image: "evil.example/bind:1"}, {Field: "agentImage", Image: "evil.example/op:1"}}, allowed)).To(Equal(
		`spec.image "evil.example/bind:1" and spec.agentImage "evil.example/op:1" are not images the operator may run: it runs only images starting with "a.example/bind:", "a.example/op:" (its --allowed-images), so the pods keep the images and configuration they run and no change rolls out. Set each to an image under one of those prefixes, or remove them to run the operator's default, or ask the operator's administrator to add them to --allowed-images.`))
}
