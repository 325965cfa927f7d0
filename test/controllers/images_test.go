package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/version"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// foreignImage is outside the suite's allowed list (the repositories of
// the default images).
const foreignImage = "evil.example/bind:1"

// podImages are the named and agent images of a StatefulSet's pod template.
func podImages(sts *appsv1.StatefulSet) []string {
	out := make([]string, 2)
	for _, c := range sts.Spec.Template.Spec.Containers {
		switch c.Name {
		case "named":
			out[0] = c.Image
		case "agent":
			out[1] = c.Image
		}
	}
	return out
}

// expectImageNotAllowed waits for Ready=False ImageNotAllowed naming the
// field and image, and for the warning event.
func expectImageNotAllowed(t *testing.T, g *WithT, ns, field, image string) {
	t.Helper()
	key := client.ObjectKey{Namespace: ns, Name: "dns"}
	var msg string
	g.Eventually(func(g Gomega) {
		var c v1.BindCluster
		g.Expect(k8sClient.Get(ctx, key, &c)).To(Succeed())
		cond := meta.FindStatusCondition(c.Status.Conditions, v1.ConditionReady)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(*cond).To(MatchFields(IgnoreExtras, Fields{
			"Status": Equal(metav1.ConditionFalse), "Reason": Equal(v1.ReasonImageNotAllowed),
			"Message": And(ContainSubstring(fmt.Sprintf("spec.%s %q", field, image)), ContainSubstring(`"`+version.Repository()+`/bind-operator-bind9:"`),
				ContainSubstring("ask the operator's administrator to add it to --allowed-images")),
		}))
		msg = cond.Message
	}).Should(Succeed(), "Ready=False ImageNotAllowed naming spec.%s", field)
	g.Eventually(func(g Gomega) []eventsv1.Event {
		var events eventsv1.EventList
		g.Expect(k8sClient.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		return events.Items
	}).Should(ContainElement(MatchFields(IgnoreExtras, Fields{
		"Type": Equal(corev1.EventTypeWarning), "Reason": Equal(v1.ReasonImageNotAllowed), "Note": Equal(msg),
		"Regarding": MatchFields(IgnoreExtras, Fields{"Kind": Equal("BindCluster"), "Name": Equal("dns")}),
	})), "a warning event naming the image")
}

// A cluster that pins no image runs the operator's defaults, which follow
// its release, and reports them; a pinned image is kept; a pinned image
// the allowed list no longer holds (the webhook admitted it before the
// list was narrowed; this suite runs no webhook) rolls nothing: the
// StatefulSet stays as it is and the cluster says why. Unpinning moves
// the cluster back to the default.
func TestClusterImagesFollowTheOperator(t *testing.T) {
	f := newFixture(t)
	defaults := []string{version.BindImage(), version.OperatorImage()}
	f.g.Expect(podImages(f.statefulSet())).To(Equal(defaults))
	f.g.Eventually(func(g Gomega) []string {
		c := f.getCluster()
		return []string{c.Status.Image, c.Status.AgentImage}
	}).Should(Equal(defaults), "status reports the images of the pod template")
	f.g.Expect(f.getCluster().Spec.Image).To(BeEmpty(), "the default is not written into spec")

	pinned := version.Repository() + "/bind-operator-bind9:v0.0.1-pinned"
	updateLatest(t, f.key("dns"), &v1.BindCluster{}, func(c *v1.BindCluster) { c.Spec.Image = pinned })
	f.g.Eventually(func(g Gomega) []string { return podImages(f.hashedStatefulSet(g)) }).
		Should(Equal([]string{pinned, version.OperatorImage()}), "the pinned image is kept, the agent's default too")
	f.g.Eventually(func(g Gomega) string { return f.getCluster().Status.Image }).Should(Equal(pinned))
	f.settle()

	var before appsv1.StatefulSet
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns"), &before))
	// With a config change alongside: it must not roll either.
	updateLatest(t, f.key("dns"), &v1.BindCluster{}, func(c *v1.BindCluster) {
		c.Spec.Image = foreignImage
		c.Spec.ExtraOptions = append(c.Spec.ExtraOptions, "minimal-responses yes;")
	})
	expectImageNotAllowed(t, f.g, f.ns, "image", foreignImage)
	f.g.Consistently(func(g Gomega) {
		var sts appsv1.StatefulSet
		g.Expect(k8sClient.Get(ctx, f.key("dns"), &sts)).To(Succeed())
		g.Expect(sts.Generation).To(Equal(before.Generation), "the StatefulSet was changed")
		g.Expect(podImages(&sts)).To(Equal([]string{pinned, version.OperatorImage()}))
		var cm corev1.ConfigMap
		g.Expect(k8sClient.Get(ctx, f.key("dns-config"), &cm)).To(Succeed())
		g.Expect(cm.Data["named.conf.primary"]).NotTo(ContainSubstring("minimal-responses"), "the config of a cluster that does not roll was written")
	}).WithTimeout(3 * time.Second).Should(Succeed())
	f.g.Expect(f.getCluster().Status.Image).To(Equal(pinned), "status reports what the pods still run")

	updateLatest(t, f.key("dns"), &v1.BindCluster{}, func(c *v1.BindCluster) { c.Spec.Image = "" })
	f.g.Eventually(func(g Gomega) {
		g.Expect(podImages(f.hashedStatefulSet(g))).To(Equal(defaults))
		c := f.getCluster()
		g.Expect(c.Status.Image).To(Equal(version.BindImage()))
		g.Expect(meta.FindStatusCondition(c.Status.Conditions, v1.ConditionReady).Reason).NotTo(Equal(v1.ReasonImageNotAllowed))
	}).Should(Succeed(), "unpinned, the cluster runs the operator's default again")
}

// A new cluster pinning a disallowed agent image gets no StatefulSet (nor
// config) until the pin is fixed.
func TestClusterWithDisallowedImageIsNotCreated(t *testing.T) {
	g := NewWithT(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ctrl-%d", seq.Add(1))}}
	testkit.Must(t, k8sClient.Create(ctx, ns))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, ns) })
	foreignAgent := strings.Replace(foreignImage, "bind", "agent", 1)
	testkit.Must(t, k8sClient.Create(ctx, &v1.BindCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "dns"},
		Spec:       v1.BindClusterSpec{Mode: v1.ModeAuthoritative, Replicas: ptr.To[int32](1), AgentImage: foreignAgent},
	}))
	expectImageNotAllowed(t, g, ns.Name, "agentImage", foreignAgent)
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns.Name, Name: name} }
	g.Consistently(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, key("dns"), &appsv1.StatefulSet{})).NotTo(Succeed(), "a StatefulSet was created")
		g.Expect(k8sClient.Get(ctx, key("dns-config"), &corev1.ConfigMap{})).NotTo(Succeed(), "a config was written")
	}).WithTimeout(firstStartSettle + time.Second).Should(Succeed())

	updateLatest(t, key("dns"), &v1.BindCluster{}, func(c *v1.BindCluster) { c.Spec.AgentImage = "" })
	g.Eventually(func(g Gomega) []string {
		var sts appsv1.StatefulSet
		g.Expect(k8sClient.Get(ctx, key("dns"), &sts)).To(Succeed())
		return podImages(&sts)
	}).Should(Equal([]string{version.BindImage(), version.OperatorImage()}))
}

// firstStartSettle is the controller's wait before a new cluster's first
// StatefulSet (3 s).
const firstStartSettle = 3 * time.Second
