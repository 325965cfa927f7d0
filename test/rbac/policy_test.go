package rbac

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// namePrefix is config/default's, which names the policy and its binding.
const namePrefix = "bind-operator-"

// installOwnedObjectsPolicy creates config/policy's ValidatingAdmissionPolicy
// and its binding as the overlays name them.
func installOwnedObjectsPolicy(c client.Client) error {
	raw, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "config", "policy", "owned-objects.yaml"))
	if err != nil {
		return err
	}
	docs := testkit.SplitYAML(raw)
	if len(docs) != 2 {
		return fmt.Errorf("config/policy/owned-objects.yaml: %d documents, want the policy and its binding", len(docs))
	}
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	if err := yaml.UnmarshalStrict(docs[0], &policy); err != nil {
		return fmt.Errorf("the policy: %w", err)
	}
	if err := yaml.UnmarshalStrict(docs[1], &binding); err != nil {
		return fmt.Errorf("the binding: %w", err)
	}
	policy.Name = namePrefix + policy.Name
	binding.Name = namePrefix + binding.Name
	binding.Spec.PolicyName = namePrefix + binding.Spec.PolicyName
	if err := c.Create(ctx, &policy); err != nil {
		return err
	}
	return c.Create(ctx, &binding)
}

// awaitOwnedObjectsPolicy waits until the API server enforces the policy
// (it loads policies asynchronously): the manager's dry-run create of an
// unlabelled ConfigMap is refused.
func awaitOwnedObjectsPolicy() error {
	sa, err := probingClient()
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx2 context.Context) (bool, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "policy-probe"}}
		last = sa.Create(ctx2, cm, client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "bind-operator may only create"), nil
	})
	if err != nil {
		return fmt.Errorf("the owned-objects policy is not enforced within a minute (last answer: %v)", last)
	}
	return nil
}

// probingClient is the manager's identity without the record of refused
// requests: the refusals it provokes are expected, and must not fail
// TestLifecycleUnderGeneratedRole.
func probingClient() (client.Client, error) {
	cfg := rest.CopyConfig(saConfig)
	cfg.WrapTransport = nil
	return client.New(cfg, client.Options{Scheme: testkit.Scheme()})
}

// TestOperatorWritesOnlyWhatItOwns (issue 44 item 5): whatever its
// ClusterRole allows, the manager's ServiceAccount cannot create, change,
// unlabel or delete a Secret, ConfigMap, Service, StatefulSet,
// PodDisruptionBudget or NetworkPolicy that does not carry
// app.kubernetes.io/managed-by=bind-operator — not in kube-system, not
// anywhere — and each refusal says why. The suite's other tests run every
// reconciler under the same policy and see no request refused.
func TestOperatorWritesOnlyWhatItOwns(t *testing.T) {
	g := NewWithT(t)
	sa, err := probingClient()
	testkit.Must(t, err)
	ns := "kube-system"
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// Objects of the cluster's own, as CoreDNS's Corefile and an unrelated
	// Secret are.
	corefile := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "coredns"}, Data: map[string]string{"Corefile": ".:53 {}"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cloud-credentials"}, Data: map[string][]byte{"key": []byte("x")}}
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owned",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "bind-operator"}}}
	for _, o := range []client.Object{corefile, secret, owned} {
		testkit.Must(t, k8sClient.Create(ctx, o))
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{corefile, secret, owned} {
			_ = k8sClient.Delete(ctx, o)
		}
	})

	refused := func(what, want string, err error) {
		t.Helper()
		g.Expect(err).To(HaveOccurred(), "%s: allowed", what)
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", what, err)
		g.Expect(err.Error()).To(ContainSubstring(want), "%s", what)
		t.Logf("%s: %v", what, err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"data":{"Corefile":"evil"}}`))
	refused("patch of kube-system/coredns", "may only change or delete configmaps it owns", sa.Patch(ctx, corefile.DeepCopy(), patch, client.DryRunAll))
	refused("update of a foreign Secret", "may only change or delete secrets it owns", sa.Update(ctx, secret.DeepCopy(), client.DryRunAll))
	adopt := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"bind-operator"}}}`))
	refused("adopting a foreign Secret by labelling it", "may only change or delete secrets it owns", sa.Patch(ctx, secret.DeepCopy(), adopt, client.DryRunAll))
	refused("create of an unlabelled Service", "may only create services labelled", sa.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sneaky"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 53}}},
	}, client.DryRunAll))
	unlabel := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":null}}}`))
	refused("removing the label from an owned ConfigMap", "may not remove the label", sa.Patch(ctx, owned.DeepCopy(), unlabel, client.DryRunAll))

	// What it owns it may change; the check is the label, not the
	// namespace.
	g.Expect(sa.Patch(ctx, owned.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"data":{"a":"b"}}`)), client.DryRunAll)).To(Succeed())
	g.Expect(sa.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "labelled",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "bind-operator"}}}, client.DryRunAll)).To(Succeed())

	// Anyone else is not the policy's business.
	g.Expect(k8sClient.Patch(ctx, corefile.DeepCopy(), patch, client.DryRunAll)).To(Succeed(), "the policy must not touch other users' writes")
}
