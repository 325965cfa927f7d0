package controllers

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestPodTemplateAdmittedAsRestricted: a pod made from the StatefulSet's
// template, as the StatefulSet controller makes it (the claim of ordinal
// 0 in place of the claim template), passes the API server's PodSecurity
// admission at the restricted level, and with it the sysctl that lets
// named bind port 53 without capabilities. An unhardened pod in the same
// namespace is refused, so the check is live.
func TestPodTemplateAdmittedAsRestricted(t *testing.T) {
	f := newFixture(t)
	sts := f.statefulSet()
	g := NewWithT(t)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("restricted-%d", seq.Add(1)),
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		},
	}}
	testkit.Must(t, k8sClient.Create(ctx, ns))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, ns) })

	spec := *sts.Spec.Template.Spec.DeepCopy()
	for _, c := range sts.Spec.VolumeClaimTemplates {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fmt.Sprintf("%s-%s-0", c.Name, sts.Name)},
		}})
	}
	g.Expect(spec.SecurityContext.Sysctls).To(ConsistOf(corev1.Sysctl{Name: "net.ipv4.ip_unprivileged_port_start", Value: "53"}))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: sts.Name + "-0", Namespace: ns.Name}, Spec: spec}
	g.Expect(k8sClient.Create(ctx, pod, client.DryRunAll)).To(Succeed(), "the BIND pod under PodSecurity restricted")

	loose := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "loose", Namespace: ns.Name}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "x"}},
	}}
	err := k8sClient.Create(ctx, loose, client.DryRunAll)
	g.Expect(err).To(MatchError(ContainSubstring("violates PodSecurity \"restricted")))
}
