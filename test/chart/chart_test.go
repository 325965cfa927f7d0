// Package chart tests the Helm chart charts/bind-operator against the
// release install files it must equal (hack/release.sh manifests), with
// the real helm (hack/build-tools.sh bin/tools helm) and kubectl (make
// envtest): the chart renders the same objects as install.yaml and
// install-cert-manager.yaml, its CRDs are crds.yaml's, it lints clean, bad
// values fail with their path, every value lands where it should, and an
// API server accepts what it renders (server-side dry run).
//
// Nothing here uses the network: the release is rendered from this
// checkout, the packaged chart from hack/release.sh chart.
package chart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

const (
	// version is the release the tests render, as hack/release.sh takes it.
	version = "v1.2.3"
	// namespace is the one users install into.
	namespace = "bind-operator-system"
	// release is the Helm release name of the documented install.
	release = "bind-operator"
	// commandTimeout bounds every helm and kubectl run.
	commandTimeout = 2 * time.Minute
)

var root = testkit.RepoRoot()

// fixture is what every test starts from: the release files of version and
// the chart packaged for it, built once per package run.
type fixture struct {
	dir     string // crds.yaml, install.yaml, install-cert-manager.yaml, the .tgz
	chart   string // the packaged chart
	helm    string
	kubectl string
	env     []string // helm's folders inside dir, nothing of the caller's
}

var (
	workDir string
	setup   = sync.OnceValues(build)
)

func TestMain(m *testing.M) {
	code := m.Run()
	if workDir != "" {
		_ = os.RemoveAll(workDir)
	}
	os.Exit(code)
}

// fx returns the fixture, failing the test with the reason (a missing
// tool names the command that builds it) when it cannot be built.
func fx(t testing.TB) *fixture {
	t.Helper()
	f, err := setup()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func build() (*fixture, error) {
	f := &fixture{
		helm:    filepath.Join(root, "bin", "tools", "helm"),
		kubectl: filepath.Join(root, "bin", "k8s", "kubectl"),
	}
	if _, err := os.Stat(f.helm); err != nil {
		return nil, fmt.Errorf("helm not found at %s: run `hack/build-tools.sh bin/tools helm` (builds Helm v4 from the Go module proxy, about 3 minutes)", f.helm)
	}
	// As hack/release.sh, KUBECTL names another kubectl (and kustomize).
	if k := os.Getenv("KUBECTL"); k != "" {
		f.kubectl = k
	}
	if _, err := os.Stat(f.kubectl); err != nil {
		return nil, fmt.Errorf("kubectl not found at %s (its kustomize renders the release files): run `make envtest`", f.kubectl)
	}
	var err error
	if workDir, err = os.MkdirTemp("", "chart-test-"); err != nil {
		return nil, err
	}
	f.dir = workDir
	f.env = cleanEnv(
		"HELM_CACHE_HOME="+filepath.Join(workDir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(workDir, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(workDir, "helm", "data"),
		"KUBECTL="+f.kubectl,
		"HELM="+f.helm,
	)
	for _, step := range []string{"manifests", "chart"} {
		if _, err := f.run(filepath.Join(root, "hack", "release.sh"), step, version, workDir); err != nil {
			return nil, err
		}
	}
	f.chart = filepath.Join(workDir, "bind-operator-"+strings.TrimPrefix(version, "v")+".tgz")
	if _, err := os.Stat(f.chart); err != nil {
		return nil, fmt.Errorf("hack/release.sh chart made no %s: %w", f.chart, err)
	}
	return f, nil
}

// cleanEnv is the process environment without what would change a render
// (the release script's image and tool overrides, helm's and kubectl's
// configuration), plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "IMG", name == "BIND_IMG", name == "REGISTRY", name == "KUBECTL", name == "HELM",
			name == "KUBECONFIG", strings.HasPrefix(name, "HELM_"):
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// run runs a command in the repository with the fixture's environment and
// returns its standard output; the error holds its standard error.
func (f *fixture) run(name string, args ...string) (string, error) {
	return f.runEnv(nil, name, args...)
}

func (f *fixture) runEnv(extraEnv []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = root
	cmd.Env = append(append([]string(nil), f.env...), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	timer := time.AfterFunc(commandTimeout, func() { _ = cmd.Process.Kill() })
	err := cmd.Wait()
	timer.Stop()
	if err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// template renders the packaged chart as `helm install bind-operator
// <chart> -n bind-operator-system` would, with extra flags.
func (f *fixture) template(extra ...string) (string, error) {
	args := append([]string{"template", release, f.chart, "--namespace", namespace}, extra...)
	return f.run(f.helm, args...)
}

// mustTemplate is template for a render that must succeed.
func (f *fixture) mustTemplate(t testing.TB, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := f.template(extra...)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, "helm template "+strings.Join(extra, " "), []byte(out))
}

// The flags that tell `helm template` the cluster has cert-manager or the
// Prometheus Operator (helm install learns it from the API server).
var (
	certManagerAPI = []string{"--api-versions", "cert-manager.io/v1/Certificate"}
	monitoringAPI  = []string{"--api-versions", "monitoring.coreos.com/v1/PodMonitor", "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"}
)

// parse reads every object of a YAML stream.
func parse(t testing.TB, what string, raw []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range testkit.SplitYAML(raw) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, doc)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

func readFile(t testing.TB, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, path, raw)
}

// clusterScoped are the cluster-scoped kinds the release files hold;
// kustomize writes its namespace into some of them (the FlowSchema), which
// the API server drops.
var clusterScoped = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"FlowSchema": true, "MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// key names an object as the API server does: apiVersion, kind, namespace
// (none for a cluster-scoped kind) and name.
func key(u *unstructured.Unstructured) string {
	ns := u.GetNamespace()
	if clusterScoped[u.GetKind()] {
		ns = ""
	}
	return fmt.Sprintf("%s/%s %s/%s", u.GetAPIVersion(), u.GetKind(), ns, u.GetName())
}

// index keys objects, failing on a duplicate.
func index(t testing.TB, what string, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		k := key(u)
		if _, dup := m[k]; dup {
			t.Fatalf("%s renders %s twice", what, k)
		}
		m[k] = u
	}
	return m
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// find returns the one object of kind and name, failing when there is none.
func find(t testing.TB, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// has says whether objs hold an object of kind and name.
func has(objs []*unstructured.Unstructured, kind, name string) bool {
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return true
		}
	}
	return false
}

// manager is the operator container of the rendered Deployment.
func manager(t testing.TB, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	d := find(t, objs, "Deployment", "bind-operator-controller-manager")
	containers, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) != 1 {
		t.Fatalf("the Deployment has %d containers (%v), want the manager alone", len(containers), err)
	}
	return containers[0].(map[string]any)
}

// args are the manager's arguments.
func args(t testing.TB, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for _, a := range manager(t, objs)["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
