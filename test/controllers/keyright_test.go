package controllers

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// victimMaterial is the key of a Secret that no BindTSIGKey may use: a
// Secret of the namespace that a tenant who may not read Secrets names in
// spec.secretName.
var victimMaterial = base64.StdEncoding.EncodeToString([]byte("the-victim's-own-32-byte-secret!"))

// noVictimMaterial fails when any entry of the cluster's keys Secret
// holds the victim's material or names the stolen key; a keys Secret that
// does not exist yet holds nothing.
func (f *fixture) noVictimMaterial(g Gomega) {
	var keys corev1.Secret
	err := k8sClient.Get(ctx, f.key("dns-keys"), &keys)
	if apierrors.IsNotFound(err) {
		return
	}
	g.Expect(err).NotTo(HaveOccurred())
	for entry, v := range keys.Data {
		g.Expect(string(v)).NotTo(ContainSubstring(victimMaterial), "keys Secret entry %s", entry)
	}
	g.Expect(string(keys.Data["keys.conf"])).NotTo(ContainSubstring(`"stolen"`))
}

// configValid is the cluster's ConfigValid condition.
func (f *fixture) configValid(g Gomega) *metav1.Condition {
	c := meta.FindStatusCondition(f.getCluster().Status.Conditions, v1.ConditionConfigValid)
	g.Expect(c).NotTo(BeNil())
	return c
}

// A BindTSIGKey that names a Secret it did not generate and does not
// import (the tenant who made it may not read Secrets, so admission let it
// through without a SubjectAccessReview) never gets that Secret's
// material into the cluster's keys: not when it is there before the
// cluster's first render, not when a zone starts using it later. The
// cluster says why it cannot render, naming the key and the Secret only,
// and keeps its running config; an imported key still works.
func TestKeyMaterialOnlyByRight(t *testing.T) {
	victim := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "victim"}, Data: map[string][]byte{v1.TSIGSecretKey: []byte(victimMaterial), "password": []byte("hunter2")}}
	stolen := func() *v1.BindTSIGKey {
		return &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "stolen"}, Spec: v1.BindTSIGKeySpec{SecretName: "victim"}}
	}
	tenantZone := func() *v1.BindZone {
		return &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}, Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: "tenant.example.com", Type: v1.ZonePrimary,
			UpdateKeyRef: &v1.LocalObjectReference{Name: "stolen"},
		}}
	}
	f := newFixtureWith(t, victim, stolen(), tenantZone())

	// The key itself says it has no right to the Secret.
	f.waitKey("stolen", metav1.ConditionFalse, v1.ReasonSecretConflict)
	// The cluster says why it does not render, in a sentence that names
	// the key, the Secret and what to do, and nothing else of the Secret.
	f.g.Eventually(func(g Gomega) {
		c := f.configValid(g)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1.ReasonRenderFailed))
		g.Expect(c.Message).To(And(ContainSubstring(`BindTSIGKey "stolen"`), ContainSubstring(`Secret "victim"`), ContainSubstring("importExisting: true")))
		g.Expect(c.Message).NotTo(Or(ContainSubstring(victimMaterial), ContainSubstring("hunter2"), ContainSubstring("password")))
	}).Should(Succeed(), "ConfigValid=False naming the refused key")
	f.g.Consistently(f.noVictimMaterial).WithTimeout(3 * time.Second).Should(Succeed())
	if s := f.secret("victim"); len(s.OwnerReferences) != 0 || len(s.Labels) != 0 || string(s.Data[v1.TSIGSecretKey]) != victimMaterial {
		t.Fatalf("the victim's Secret was modified: %+v", s.ObjectMeta)
	}

	// Without the zone that uses it, the cluster renders; the key stays
	// unusable, and a zone that starts using it later changes nothing.
	testkit.Must(t, k8sClient.Delete(ctx, &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: f.ns}}))
	before := f.settle()
	f.g.Eventually(func(g Gomega) { g.Expect(f.configValid(g).Status).To(Equal(metav1.ConditionTrue)) }).Should(Succeed())
	f.noVictimMaterial(f.g)
	f.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "tenant2"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: "tenant2.example.com", Type: v1.ZonePrimary,
		UpdateKeyRef: &v1.LocalObjectReference{Name: "stolen"},
	}})
	f.g.Eventually(func(g Gomega) {
		c := f.configValid(g)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring(`BindTSIGKey "stolen"`))
	}).Should(Succeed(), "ConfigValid=False once a zone uses the key")
	f.g.Consistently(func(g Gomega) {
		f.noVictimMaterial(g)
		g.Expect(f.hashedStatefulSet(g).Spec.Template.Annotations[v1.AnnotationConfigHash]).To(Equal(before), "the running config stays")
	}).WithTimeout(3 * time.Second).Should(Succeed())
	testkit.Must(t, k8sClient.Delete(ctx, &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "tenant2", Namespace: f.ns}}))

	// An imported key (admission checked that its creator may read the
	// Secret) is used as before.
	legacy := base64.StdEncoding.EncodeToString([]byte("an-imported-32-byte-key-material"))
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Data: map[string][]byte{v1.TSIGSecretKey: []byte(legacy)}})
	f.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "adopted"}, Spec: v1.BindTSIGKeySpec{ImportExisting: true, SecretName: "legacy"}})
	f.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "imported"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: "imported.example.com", Type: v1.ZonePrimary,
		UpdateKeyRef: &v1.LocalObjectReference{Name: "adopted"},
	}})
	f.g.Eventually(func(g Gomega) {
		var keys corev1.Secret
		g.Expect(k8sClient.Get(ctx, f.key("dns-keys"), &keys)).To(Succeed())
		conf := string(keys.Data["keys.conf"])
		g.Expect(conf).To(ContainSubstring(`"adopted"`))
		g.Expect(conf).To(ContainSubstring(legacy))
		g.Expect(f.configValid(g).Status).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed(), "the imported key in the cluster's keys")
	f.noVictimMaterial(f.g)
	for _, c := range f.getCluster().Status.Conditions {
		if strings.Contains(c.Message, legacy) {
			t.Fatalf("key material in condition %s", c.Type)
		}
	}
}
