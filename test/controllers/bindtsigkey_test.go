package controllers

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

func keyNamespace(t *testing.T) *fixture {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tsig-%d", seq.Add(1))}}
	testkit.Must(t, k8sClient.Create(ctx, ns))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, ns) })
	return &fixture{t: t, g: NewWithT(t), ns: ns.Name}
}

func (f *fixture) keyCondition(name string) *metav1.Condition {
	var k v1.BindTSIGKey
	if err := k8sClient.Get(ctx, f.key(name), &k); err != nil {
		return nil
	}
	if k.Status.ObservedGeneration != k.Generation {
		return nil
	}
	return meta.FindStatusCondition(k.Status.Conditions, v1.ConditionReady)
}

func (f *fixture) waitKey(name string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	f.t.Helper()
	var c *metav1.Condition
	f.g.Eventually(func(g Gomega) {
		c = f.keyCondition(name)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status))
		g.Expect(c.Reason).To(Equal(reason))
	}).Should(Succeed(), "BindTSIGKey %s Ready=%s/%s", name, status, reason)
	return c
}

func (f *fixture) secret(name string) *corev1.Secret {
	f.t.Helper()
	var s corev1.Secret
	testkit.Must(f.t, k8sClient.Get(ctx, f.key(name), &s))
	return &s
}

func TestTSIGKeyGeneratedOnceWithTemplate(t *testing.T) {
	f := keyNamespace(t)
	key := &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "external-dns"}, Spec: v1.BindTSIGKeySpec{
		Algorithm: "hmac-sha512",
		SecretTemplate: &v1.SecretTemplate{
			Labels:      map[string]string{"team": "dns"},
			Annotations: map[string]string{"reflector.v1.k8s.emberstack.com/reflection-allowed": "true", "old": "x"},
		},
	}}
	f.create(key)
	f.waitKey("external-dns", metav1.ConditionTrue, v1.ReasonKeyGenerated)

	s := f.secret("external-dns-tsig")
	raw, err := base64.StdEncoding.DecodeString(string(s.Data[v1.TSIGSecretKey]))
	if err != nil || len(raw) != 64 {
		t.Fatalf("hmac-sha512 material should be 64 random bytes, got %d (%v)", len(raw), err)
	}
	if string(s.Data[v1.TSIGSecretAlgorithm]) != "hmac-sha512" || string(s.Data[v1.TSIGSecretKeyName]) != "external-dns" {
		t.Errorf("Secret data for clients: algorithm=%q keyName=%q", s.Data[v1.TSIGSecretAlgorithm], s.Data[v1.TSIGSecretKeyName])
	}
	if s.Labels[v1.LabelManagedBy] != v1.ManagedByValue || s.Labels["team"] != "dns" || s.Annotations["old"] != "x" {
		t.Errorf("template metadata missing: labels=%v annotations=%v", s.Labels, s.Annotations)
	}
	var k v1.BindTSIGKey
	testkit.Must(t, k8sClient.Get(ctx, f.key("external-dns"), &k))
	if !metav1.IsControlledBy(s, &k) {
		t.Error("the generated Secret must be owned by its BindTSIGKey, for garbage collection")
	}
	if k.Status.SecretName != "external-dns-tsig" || k.Status.KeyName != "external-dns" {
		t.Errorf("status = %+v", k.Status)
	}
	material := string(s.Data[v1.TSIGSecretKey])
	if strings.Contains(fmt.Sprintf("%+v", k.Status), material) {
		t.Fatal("key material leaked into the status")
	}

	// Someone else labels the Secret; we edit the template.
	s.Labels["other-controller"] = "keep-me"
	testkit.Must(t, k8sClient.Update(ctx, s))
	updateLatest(t, f.key("external-dns"), &v1.BindTSIGKey{}, func(k *v1.BindTSIGKey) {
		k.Spec.SecretTemplate.Annotations = map[string]string{"reflector.v1.k8s.emberstack.com/reflection-allowed": "true", "new": "y"}
		k.Spec.SecretTemplate.Labels = nil
	})
	f.g.Eventually(func(g Gomega) {
		s = f.secret("external-dns-tsig")
		g.Expect(s.Annotations).To(And(HaveKeyWithValue("new", "y"), Not(HaveKey("old"))))
		g.Expect(s.Labels).NotTo(HaveKey("team"))
	}).Should(Succeed(), "the template edit on the Secret")
	if string(s.Data[v1.TSIGSecretKey]) != material {
		t.Fatal("editing the template regenerated the key material")
	}
	if s.Labels["other-controller"] != "keep-me" || s.Labels[v1.LabelManagedBy] != v1.ManagedByValue {
		t.Errorf("labels not set by the template must survive, and managed-by always: %v", s.Labels)
	}

	// Reconciles with nothing to change leave the Secret alone.
	rv := s.ResourceVersion
	updateLatest(t, f.key("external-dns"), &v1.BindTSIGKey{}, func(k *v1.BindTSIGKey) { k.Annotations = map[string]string{"poke": "1"} })
	f.g.Consistently(func() string { return f.secret("external-dns-tsig").ResourceVersion }).
		WithTimeout(2*time.Second).Should(Equal(rv), "an idle reconcile updated the Secret")
}

func TestTSIGKeyImportNeverModifiesTheSecret(t *testing.T) {
	f := keyNamespace(t)
	f.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Spec: v1.BindTSIGKeySpec{
		ImportExisting: true, SecretName: "legacy-key",
	}})
	c := f.waitKey("legacy", metav1.ConditionFalse, v1.ReasonSecretMissing)
	if !strings.Contains(c.Message, `"legacy-key"`) {
		t.Errorf("message should name the missing Secret: %s", c.Message)
	}

	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "legacy-key", Labels: map[string]string{"owner": "someone"}},
		Data: map[string][]byte{v1.TSIGSecretKey: []byte(base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef")))}})
	f.waitKey("legacy", metav1.ConditionTrue, v1.ReasonKeyImported)
	s := f.secret("legacy-key")
	if len(s.OwnerReferences) != 0 || s.Labels[v1.LabelManagedBy] != "" || len(s.Labels) != 1 {
		t.Fatalf("an imported Secret was modified: labels=%v owners=%v", s.Labels, s.OwnerReferences)
	}

	s.Data[v1.TSIGSecretKey] = []byte("not base64!")
	testkit.Must(t, k8sClient.Update(ctx, s))
	f.waitKey("legacy", metav1.ConditionFalse, v1.ReasonSecretUnusable)
}

func TestTSIGKeyRefusesForeignSecret(t *testing.T) {
	f := keyNamespace(t)
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "taken-tsig"}, Data: map[string][]byte{"x": []byte("y")}})
	f.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "taken"}})
	c := f.waitKey("taken", metav1.ConditionFalse, v1.ReasonSecretConflict)
	if !strings.Contains(c.Message, "importExisting") {
		t.Errorf("the message should say how to adopt the Secret: %s", c.Message)
	}
	if s := f.secret("taken-tsig"); len(s.Data) != 1 || len(s.Labels) != 0 {
		t.Fatal("a Secret the key does not own was modified")
	}
	if want := `the Secret "taken-tsig" exists but was not created for this BindTSIGKey; set importExisting: true to adopt it, or choose another secretName`; c.Message != want {
		t.Errorf("message = %q, want %q", c.Message, want)
	}
	// Re-reads (SecretResyncPeriod is 1 s here) leave it byte for byte.
	before := stored(t, f.key("taken-tsig"), &corev1.Secret{})
	f.g.Consistently(func() string { return stored(t, f.key("taken-tsig"), &corev1.Secret{}) }).
		WithTimeout(3*time.Second).Should(Equal(before), "a Secret the key does not own was modified")

	// Once it is gone, the key generates its own.
	testkit.Must(t, k8sClient.Delete(ctx, f.secret("taken-tsig")))
	f.waitKey("taken", metav1.ConditionTrue, v1.ReasonKeyGenerated)
	var k v1.BindTSIGKey
	testkit.Must(t, k8sClient.Get(ctx, f.key("taken"), &k))
	if s := f.secret("taken-tsig"); !metav1.IsControlledBy(s, &k) || len(s.Data[v1.TSIGSecretKey]) == 0 {
		t.Fatal("the key did not generate its own Secret once the other one was gone")
	}
}
