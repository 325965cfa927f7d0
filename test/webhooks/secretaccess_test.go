package webhooks

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestImportNeedsTheRightToReadTheSecret (issue 12 item 4): importing a
// Secret into a BindTSIGKey copies its key into the Secret the BIND pods
// mount, so the webhook asks the API server (SubjectAccessReview) whether
// the requesting user may get that Secret. A tenant with rights on
// BindTSIGKeys only cannot import, and its warnings do not say whether a
// Secret exists; a user who may read the Secret can. (importExisting and
// secretName are immutable, so only a create starts an import.)
func TestImportNeedsTheRightToReadTheSecret(t *testing.T) {
	g := NewWithT(t)
	const space = "wh-secrets"
	testkit.Must(t, k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}}))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: space}}) })
	in := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: space} }
	for _, name := range []string{"victim", "other"} {
		testkit.Must(t, k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: in(name), StringData: map[string]string{v1alpha1.TSIGSecretKey: "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI="}}))
	}
	// Both users may manage BindTSIGKeys; only "reader" may get the
	// Secret "victim".
	keys := rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"bindtsigkeys"}, Verbs: []string{"get", "list", "create", "update", "patch"}}
	testkit.Must(t, k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: in("keys"), Rules: []rbacv1.PolicyRule{keys}}))
	testkit.Must(t, k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: in("read-victim"), Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"victim"}, Verbs: []string{"get"}},
	}}))
	bind := func(name, role string, users ...string) {
		var subjects []rbacv1.Subject
		for _, u := range users {
			subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
		}
		testkit.Must(t, k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: in(name), Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role}}))
	}
	bind("keys", "keys", "tenant", "reader")
	bind("read-victim", "read-victim", "reader")
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(restCfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		c, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
		testkit.Must(t, err)
		return client.WithFieldOwner(c, user)
	}
	tenant, reader := as("tenant"), as("reader")
	imported := func(name, secret string) *v1alpha1.BindTSIGKey {
		return &v1alpha1.BindTSIGKey{ObjectMeta: in(name), Spec: v1alpha1.BindTSIGKeySpec{ImportExisting: true, SecretName: secret}}
	}
	const why = "importing it would copy its key into the BIND pods"

	// The tenant cannot import, whether or not the Secret exists.
	expectInvalid(t, tenant.Create(ctx, imported("stolen", "victim")), "spec.secretName", `you may not get Secret "victim" in this namespace, and `+why)
	expectInvalid(t, tenant.Create(ctx, imported("guess", "no-such-secret")), "spec.secretName", `you may not get Secret "no-such-secret"`)

	// Its warnings say nothing about the Secret.
	cfg := rest.CopyConfig(restCfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:authenticated"}}
	warned := &warnings{}
	cfg.WarningHandler = warned
	watched, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
	testkit.Must(t, err)
	generated := &v1alpha1.BindTSIGKey{ObjectMeta: in("generated"), Spec: v1alpha1.BindTSIGKeySpec{SecretName: "victim"}}
	g.Expect(watched.Create(ctx, generated)).To(Succeed())
	g.Expect(warned.contains("victim")).To(BeFalse(), "warnings to a user who may not read the Secret: %v", warned.msgs)
	testkit.Must(t, k8sClient.Delete(ctx, generated)) // one key per Secret

	// The reader may import it.
	g.Expect(reader.Create(ctx, imported("shared", "victim"))).To(Succeed())
}
