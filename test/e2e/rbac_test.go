package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestTenantRolesAggregate (issue 14 item 3): the editor and viewer roles
// shipped in config/rbac are aggregated by the real controller-manager
// into the built-in edit and view ClusterRoles, so a team given edit in
// its namespace manages every kind of this API there, and a team given
// view reads them and changes nothing. Every kind the API server serves
// is checked, so a new kind without its roles fails here.
func TestTenantRolesAggregate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-tenant-roles")
	for user, role := range map[string]string{"alice": "edit", "bob": "view"} {
		testkit.Must(t, env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		}))
	}
	list, err := env.Cluster.Client().Discovery().ServerResourcesForGroupVersion(v1.GroupVersion.String())
	testkit.Must(t, err)
	var kinds []string
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") {
			kinds = append(kinds, r.Name)
		}
	}
	if len(kinds) != 9 {
		t.Fatalf("the API server serves %d kinds of %s (%v); the test expects all nine", len(kinds), v1.GroupVersion, kinds)
	}
	can := func(user, verb, resource string) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: v1.GroupVersion.Group, Resource: resource, Verb: verb},
		}}
		err := env.Client.Create(ctx, sar)
		return sar.Status.Allowed, err
	}
	for _, kind := range kinds {
		for _, c := range []struct {
			user, verb string
			want       bool
		}{
			{"alice", "create", true}, {"alice", "update", true}, {"alice", "delete", true}, {"alice", "list", true},
			{"bob", "get", true}, {"bob", "list", true}, {"bob", "watch", true},
			{"bob", "create", false}, {"bob", "update", false}, {"bob", "delete", false},
		} {
			// Aggregation is asynchronous: the controller-manager copies
			// the rules into edit and view shortly after install.
			NewWithT(t).Eventually(func() (bool, error) { return can(c.user, c.verb, kind) }).
				WithContext(ctx).WithTimeout(time.Minute).Should(Equal(c.want), "%s may %s %s", c.user, c.verb, kind)
		}
	}
}

// TestOperatorTokenCannotPatchKubeSystem (issue 44 item 5): the release's
// ValidatingAdmissionPolicy refuses every write of the operator's
// ServiceAccount to an object it does not own, whatever its ClusterRole
// allows: `kubectl patch --dry-run=server` of kube-system's ConfigMap as
// that ServiceAccount is refused with the policy's sentence, while the
// same patch as the admin is not.
func TestOperatorTokenCannotPatchKubeSystem(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sa := "system:serviceaccount:" + OperatorNamespace + ":" + OperatorDeployment
	patch := []string{"-n", "kube-system", "patch", "configmap", "kube-root-ca.crt", "--dry-run=server", "--type=merge", "-p", `{"data":{"ca.crt":"evil"}}`}
	// kube-root-ca.crt appears shortly after the namespace does.
	NewWithT(t).Eventually(func() (string, error) {
		return env.Kubectl(ctx, "", "-n", "kube-system", "get", "configmap", "kube-root-ca.crt", "-o", "name")
	}).WithContext(ctx).Should(ContainSubstring("kube-root-ca.crt"))
	out, err := env.Kubectl(ctx, "", append([]string{"--as=" + sa}, patch...)...)
	if err == nil {
		t.Fatalf("the operator's ServiceAccount patched kube-system/kube-root-ca.crt (dry run):\n%s", out)
	}
	if !strings.Contains(out, "bind-operator may only change or delete configmaps it owns") {
		t.Errorf("the refusal does not come from the owned-objects policy:\n%s", out)
	}
	t.Logf("kubectl --as=%s %s: %s", sa, strings.Join(patch, " "), strings.TrimSpace(out))
	if out, err := env.Kubectl(ctx, "", patch...); err != nil {
		t.Errorf("the admin's dry-run patch was refused too: %v\n%s", err, out)
	}
}
