// Package rbac runs the reconcilers as the manager's ServiceAccount, bound
// to nothing but the generated ClusterRole of config/rbac, so a verb the
// code needs and the role lacks fails here instead of in a cluster.
package rbac

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/controllers/catalogs"
	"git.unkin.net/unkin/bind-operator/controllers/clusters"
	"git.unkin.net/unkin/bind-operator/controllers/configstatus"
	"git.unkin.net/unkin/bind-operator/controllers/dnsrecords"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/controllers/tsigkeys"
	"git.unkin.net/unkin/bind-operator/controllers/zones"
	"git.unkin.net/unkin/bind-operator/internal/version"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

const (
	operatorNamespace = "bind-operator-system"
	// serviceAccount is the name the install gives it (namePrefix
	// bind-operator-), which config/policy's ValidatingAdmissionPolicy
	// names.
	serviceAccount = "bind-operator-controller-manager"
)

var (
	ctx       = context.Background()
	k8sClient client.Client
	// adminConfig is the suite's own identity (the RSS benchmark's).
	adminConfig *rest.Config
	// saConfig is the manager's identity: the ServiceAccount, nothing more.
	saConfig *rest.Config
	// refused holds every request the API server refused the manager
	// (403), as "verb path".
	refused forbiddenLog
)

type forbiddenLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *forbiddenLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, s)
}

func (l *forbiddenLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestMain(m *testing.M) {
	if mode := os.Getenv(rssChildEnv); mode != "" {
		if err := runRSSChild(mode); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	testkit.Main(m, testkit.Options{Benchmarks: true, Requires: []string{"named-checkconf"}}, func(s *testkit.Suite) error {
		k8sClient, adminConfig = s.Client, s.Config
		if err := installRBAC(s.Client); err != nil {
			return err
		}
		saConfig = rest.CopyConfig(s.Config)
		saConfig.Impersonate = rest.ImpersonationConfig{
			UserName: fmt.Sprintf("system:serviceaccount:%s:%s", operatorNamespace, serviceAccount),
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"},
		}
		saConfig.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return roundTripper(func(r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				if err == nil && resp.StatusCode == http.StatusForbidden {
					refused.add(r.Method + " " + r.URL.Path)
				}
				return resp, err
			})
		}
		// The reconcilers run under config/policy's admission policy too:
		// nothing they do may touch an object they do not own.
		if err := installOwnedObjectsPolicy(s.Client); err != nil {
			return err
		}
		if err := awaitOwnedObjectsPolicy(); err != nil {
			return err
		}
		checkconf, err := exec.LookPath("named-checkconf")
		if err != nil {
			return err
		}
		return s.StartManagerAs(saConfig, ctrl.Options{Cache: reconcileutil.CacheOptions(saConfig), NewClient: reconcileutil.NewClient}, func(mgr ctrl.Manager) error {
			for _, r := range []interface{ SetupWithManager(ctrl.Manager) error }{
				&clusters.BindClusterReconciler{
					Client: mgr.GetClient(),
					Options: clusters.ClusterOptions{
						BindImage:         version.BindImage(),
						AgentImage:        version.OperatorImage(),
						OperatorNamespace: operatorNamespace,
						OperatorPodLabels: map[string]string{"app.kubernetes.io/name": "bind-operator"},
						NamedCheckconf:    checkconf,
					},
					Paths:              render.DefaultPaths(),
					SecretResyncPeriod: time.Second,
				},
				&tsigkeys.BindTSIGKeyReconciler{Client: mgr.GetClient(), SecretResyncPeriod: time.Second},
				&zones.BindZoneReconciler{Client: mgr.GetClient(), Servers: noDataPlane{}, Endpoints: noDataPlane{}, Paths: render.DefaultPaths()},
				&dnsrecords.DNSRecordReconciler{Client: mgr.GetClient(), Servers: noDataPlane{}},
				&catalogs.BindCatalogZoneReconciler{Client: mgr.GetClient(), Endpoints: noDataPlane{}},
				&configstatus.ConfigStatusReconciler{Client: mgr.GetClient(), Endpoints: noDataPlane{}},
			} {
				if err := r.SetupWithManager(mgr); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// installRBAC creates the operator's namespace and ServiceAccount, and the
// generated roles with their bindings as config/rbac has them, in the
// namespace kustomize would give them.
func installRBAC(c client.Client) error {
	dir := filepath.Join(testkit.RepoRoot(), "config", "rbac")
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceAccount, Namespace: operatorNamespace}},
	}
	for _, file := range []string{"role.yaml", "role_binding.yaml", "metrics_auth_role.yaml", "metrics_auth_role_binding.yaml", "metrics_reader_role.yaml"} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		for _, doc := range testkit.SplitYAML(raw) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			var obj client.Object
			switch u.GetKind() {
			case "ClusterRole":
				obj = &rbacv1.ClusterRole{}
			case "Role":
				obj = &rbacv1.Role{}
			case "ClusterRoleBinding":
				obj = &rbacv1.ClusterRoleBinding{}
			case "RoleBinding":
				obj = &rbacv1.RoleBinding{}
			default:
				return fmt.Errorf("%s: unexpected kind %s", file, u.GetKind())
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
				return err
			}
			if obj.GetNamespace() != "" {
				obj.SetNamespace(operatorNamespace)
			}
			switch b := obj.(type) {
			case *rbacv1.ClusterRoleBinding:
				setSubjectNamespace(b.Subjects)
			case *rbacv1.RoleBinding:
				setSubjectNamespace(b.Subjects)
			}
			objs = append(objs, obj)
		}
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("%T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

func setSubjectNamespace(subjects []rbacv1.Subject) {
	for i := range subjects {
		if subjects[i].Kind == rbacv1.ServiceAccountKind {
			subjects[i].Namespace = operatorNamespace
			subjects[i].Name = serviceAccount
		}
	}
}
