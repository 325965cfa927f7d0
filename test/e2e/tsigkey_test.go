package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestTSIGKeySecretTemplate (issue 6 e): a BindTSIGKey's secretTemplate is
// stamped on the generated Secret, and editing the template updates the
// Secret's metadata — values changed, keys dropped from the template
// removed, keys someone else set kept, the managed-by label kept — without
// ever generating new key material.
func TestTSIGKeySecretTemplate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-tsig")
	const (
		reflAllowed    = "reflector.v1.k8s.emberstack.com/reflection-allowed"
		reflNamespaces = "reflector.v1.k8s.emberstack.com/reflection-allowed-namespaces"
		partOf         = "app.kubernetes.io/part-of"
		userNote       = "example.com/note"
	)
	key := &v1.BindTSIGKey{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "external-dns"},
		Spec: v1.BindTSIGKeySpec{
			Algorithm: "hmac-sha512",
			SecretTemplate: &v1.SecretTemplate{
				Labels:      map[string]string{partOf: "external-dns"},
				Annotations: map[string]string{reflAllowed: "true", reflNamespaces: "external-dns"},
			},
		},
	}
	testkit.Must(t, env.Client.Create(ctx, key))
	secretKey := client.ObjectKey{Namespace: ns, Name: "external-dns-tsig"}

	first := waitSecret(ctx, t, secretKey, "the template's labels and annotations", func(s *corev1.Secret) bool {
		return s.Labels[partOf] == "external-dns" && s.Annotations[reflAllowed] == "true" && s.Annotations[reflNamespaces] == "external-dns"
	})
	if first.Labels[v1.LabelManagedBy] != v1.ManagedByValue {
		t.Errorf("the generated Secret lacks %s=%s: %v", v1.LabelManagedBy, v1.ManagedByValue, first.Labels)
	}
	if len(first.Data[v1.TSIGSecretKey]) == 0 || string(first.Data[v1.TSIGSecretAlgorithm]) != "hmac-sha512" {
		t.Fatalf("the generated Secret holds no hmac-sha512 key: %v", slices.Sorted(maps.Keys(first.Data)))
	}
	t.Logf("Secret %s created with labels %v and annotations %v", secretKey.Name, first.Labels, first.Annotations)

	// Someone else (a reflector, a human) annotates the Secret: the
	// operator must leave that alone.
	patched := first.DeepCopy()
	patched.Annotations[userNote] = "kept"
	testkit.Must(t, env.Client.Patch(ctx, patched, client.MergeFrom(first)))

	// Edit the template: one annotation changes value, one is dropped, one
	// is new; the label changes value.
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(key), key))
	key.Spec.SecretTemplate = &v1.SecretTemplate{
		Labels:      map[string]string{partOf: "external-dns-v2"},
		Annotations: map[string]string{reflNamespaces: "external-dns,monitoring", "example.com/rotated": "never"},
	}
	testkit.Must(t, env.Client.Update(ctx, key))
	start := time.Now()
	second := waitSecret(ctx, t, secretKey, "the edited template", func(s *corev1.Secret) bool {
		_, stillAllowed := s.Annotations[reflAllowed]
		return s.Labels[partOf] == "external-dns-v2" && s.Annotations[reflNamespaces] == "external-dns,monitoring" &&
			s.Annotations["example.com/rotated"] == "never" && !stillAllowed
	})
	t.Logf("the template edit reached the Secret in %s: labels %v, annotations %v", time.Since(start).Round(time.Millisecond), second.Labels, second.Annotations)
	if second.Annotations[userNote] != "kept" {
		t.Errorf("the operator removed an annotation it does not own (%s): %v", userNote, second.Annotations)
	}
	if second.Labels[v1.LabelManagedBy] != v1.ManagedByValue {
		t.Errorf("the managed-by label did not survive the template edit: %v", second.Labels)
	}
	for _, k := range []string{v1.TSIGSecretKey, v1.TSIGSecretAlgorithm, v1.TSIGSecretKeyName} {
		if !bytes.Equal(first.Data[k], second.Data[k]) {
			t.Errorf("editing the template changed the Secret's %q: new key material must never be generated", k)
		}
	}
	if second.UID != first.UID {
		t.Errorf("the Secret was recreated (uid %s -> %s)", first.UID, second.UID)
	}

	// Converged means idle: no further writes to the Secret while nothing
	// changes (the reconcile is idempotent).
	NewWithT(t).Consistently(func() (string, error) {
		var after corev1.Secret
		err := env.Client.Get(ctx, secretKey, &after)
		return after.ResourceVersion, err
	}).WithContext(ctx).WithTimeout(3*time.Second).Should(Equal(second.ResourceVersion), "the Secret kept changing after the template converged")
}

func waitSecret(ctx context.Context, t *testing.T, key client.ObjectKey, what string, ok func(*corev1.Secret) bool) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	NewWithT(t).Eventually(func() error {
		if err := env.Client.Get(ctx, key, &s); err != nil {
			return err
		}
		if !ok(&s) {
			return fmt.Errorf("labels %v, annotations %v", s.Labels, s.Annotations)
		}
		return nil
	}).WithContext(ctx).WithTimeout(60*time.Second).Should(Succeed(), "Secret %s never carried %s", key, what)
	return &s
}
