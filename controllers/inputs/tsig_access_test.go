package inputs

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
)

// An imported key whose Secret is missing, or lacks the material, is the
// user's to fix: the error says so and the cluster reports it
// (RenderRefused); a generated key's missing Secret is waited for.
func TestImportedSecretMissingIsReported(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	gone := &bindv1alpha1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"}, Spec: bindv1alpha1.BindTSIGKeySpec{SecretName: "legacy", ImportExisting: true}}
	empty := &bindv1alpha1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "empty"}, Spec: bindv1alpha1.BindTSIGKeySpec{SecretName: "blank", ImportExisting: true}}
	generated := &bindv1alpha1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fresh"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gone, empty, generated,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "blank"}, Data: map[string][]byte{"other": []byte("x")}}).Build()
	ctx := context.Background()

	_, err := clusterpods.KeyMaterial(ctx, c, gone)
	g.Expect(RenderRefused(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(`imports Secret "legacy", which does not exist; create it`))
	_, err = clusterpods.KeyMaterial(ctx, c, empty)
	g.Expect(RenderRefused(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring(`imports Secret "blank", which has no "secret" entry`))
	_, err = clusterpods.KeyMaterial(ctx, c, generated)
	g.Expect(err).To(HaveOccurred())
	g.Expect(RenderRefused(err)).To(BeFalse(), "a generated key's Secret is waited for: %v", err)
}
