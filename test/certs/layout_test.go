package certs

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"git.unkin.net/unkin/bind-operator/certs"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// generated files are written by `make manifests` from markers elsewhere.
var generated = map[string]bool{"config/rbac/role.yaml": true, "config/webhook/manifests.yaml": true}

// TestKustomizationsReferenceExistingFiles walks every kustomization of the
// install and checks that what it lists exists (a missing generated file is
// reported, since `make manifests` creates it).
func TestKustomizationsReferenceExistingFiles(t *testing.T) {
	root := testkit.RepoRoot()
	for _, d := range []string{"crd", "rbac", "manager", "webhook", "certmanager", "default", "default-selfmanaged"} {
		dir := configDir(d)
		k := readKustomization(t, dir)
		paths := slices.Concat(k.Resources, k.Configurations)
		for _, p := range k.Patches {
			paths = append(paths, p.Path)
		}
		for _, p := range paths {
			full := filepath.Join(dir, p)
			rel, _ := filepath.Rel(root, full)
			if _, err := os.Stat(full); err != nil {
				if generated[rel] {
					t.Logf("%s is missing: run `make manifests`", rel)
					continue
				}
				t.Errorf("config/%s lists %s, which does not exist", d, p)
			}
		}
	}
}

// TestCRDKustomizationListsEveryCRD keeps config/crd/kustomization.yaml in
// step with the generated CRDs, so a new kind is never left out of the
// install.
func TestCRDKustomizationListsEveryCRD(t *testing.T) {
	files, err := filepath.Glob(configDir("crd", "bases", "*.yaml"))
	testkit.Must(t, err)
	var want []string
	for _, f := range files {
		want = append(want, "bases/"+filepath.Base(f))
	}
	got := slices.Clone(readKustomization(t, configDir("crd")).Resources)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("config/crd/kustomization.yaml lists %v, config/crd/bases holds %v", got, want)
	}
}

func managerContainer(t *testing.T) (deploy *unstructured.Unstructured, container map[string]any) {
	t.Helper()
	deploy = find(objectsOf(t, configDir("manager")), "Deployment", "controller-manager")
	if deploy == nil {
		t.Fatal("config/manager has no Deployment controller-manager")
	}
	cs, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	for _, c := range cs {
		if c.(map[string]any)["name"] == "manager" {
			return deploy, c.(map[string]any)
		}
	}
	t.Fatal("no manager container")
	return nil, nil
}

func certDirArg(t *testing.T, container map[string]any) string {
	t.Helper()
	args, _, _ := unstructured.NestedStringSlice(container, "args")
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--webhook-cert-dir="); ok {
			return v
		}
	}
	t.Fatalf("manager args %v lack --webhook-cert-dir", args)
	return ""
}

func TestManagerDeployment(t *testing.T) {
	deploy, c := managerContainer(t)
	cmd, _, _ := unstructured.NestedStringSlice(c, "command")
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if !slices.Equal(cmd, []string{"/bind-operator"}) || len(args) == 0 || args[0] != "manager" || !slices.Contains(args, "--leader-elect") {
		t.Errorf("want /bind-operator manager --leader-elect, got %v %v", cmd, args)
	}
	if certDirArg(t, c) != certs.DefaultCertDir {
		t.Errorf("--webhook-cert-dir is not controller-runtime's default folder %s", certs.DefaultCertDir)
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		// JSON numbers decode as float64.
		if port, _, _ := unstructured.NestedFieldNoCopy(c, probe, "httpGet", "port"); fmt.Sprint(port) != "8081" {
			t.Errorf("%s on port %v, want 8081", probe, port)
		}
	}
	if v, _, _ := unstructured.NestedBool(deploy.Object, "spec", "template", "spec", "securityContext", "runAsNonRoot"); !v {
		t.Error("pod does not require a non-root user")
	}
	for field, want := range map[string]bool{"runAsNonRoot": true, "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true} {
		if v, ok, _ := unstructured.NestedBool(c, "securityContext", field); !ok || v != want {
			t.Errorf("container securityContext.%s = %v, want %v", field, v, want)
		}
	}
	// A read-only root needs a writable /tmp: the operator runs
	// named-checkconf on a copy of each render in os.TempDir().
	mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	vols, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "volumes")
	tmpVol := ""
	for _, m := range mounts {
		if m := m.(map[string]any); m["mountPath"] == os.TempDir() && m["readOnly"] != true {
			tmpVol, _ = m["name"].(string)
		}
	}
	if !slices.ContainsFunc(vols, func(v any) bool {
		_, ok := v.(map[string]any)["emptyDir"]
		return ok && tmpVol != "" && v.(map[string]any)["name"] == tmpVol
	}) {
		t.Errorf("no writable emptyDir at %s: mounts %v, volumes %v", os.TempDir(), mounts, vols)
	}
	// Images are imported into the node's runtime; there may be no registry.
	if p, _, _ := unstructured.NestedString(c, "imagePullPolicy"); p != "IfNotPresent" {
		t.Errorf("imagePullPolicy %q, want IfNotPresent", p)
	}
	for _, r := range []string{"requests", "limits"} {
		if m, _, _ := unstructured.NestedMap(c, "resources", r); len(m) == 0 {
			t.Errorf("no resources.%s", r)
		}
	}
	env, _, _ := unstructured.NestedSlice(c, "env")
	if !slices.ContainsFunc(env, func(e any) bool { return e.(map[string]any)["name"] == "POD_NAMESPACE" }) {
		t.Error("POD_NAMESPACE is not passed (the self-managed mode needs it)")
	}
	// The webhook Service must select the manager's pods.
	svc := find(objectsOf(t, configDir("webhook")), "Service", "webhook-service")
	sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	labels, _, _ := unstructured.NestedStringMap(deploy.Object, "spec", "template", "metadata", "labels")
	for k, v := range sel {
		if labels[k] != v {
			t.Errorf("webhook Service selects %s=%s, pods carry %q", k, v, labels[k])
		}
	}
}

// TestManagerMemoryLimitIsSoft: the manager ships with a soft limit for
// the Go runtime (GOMEMLIMIT, docs/behaviours.md "Scale: the manager's
// memory") at most half of its container's limits.memory, so the
// executable fits beside it and a larger installation's live heap can
// pass it, costing collector CPU, before the container is OOM-killed.
func TestManagerMemoryLimitIsSoft(t *testing.T) {
	_, c := managerContainer(t)
	env, _, _ := unstructured.NestedSlice(c, "env")
	soft := ""
	for _, e := range env {
		if e := e.(map[string]any); e["name"] == "GOMEMLIMIT" {
			soft, _ = e["value"].(string)
		}
	}
	m := regexp.MustCompile(`^([0-9]+)(B|KiB|MiB|GiB)$`).FindStringSubmatch(soft)
	if m == nil {
		t.Fatalf("GOMEMLIMIT = %q, want a size such as 64MiB", soft)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	softBytes := n << map[string]int{"B": 0, "KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
	hard, _, _ := unstructured.NestedString(c, "resources", "limits", "memory")
	if q, err := resource.ParseQuantity(hard); err != nil || 2*softBytes > q.Value() {
		t.Errorf("GOMEMLIMIT %s is more than half of limits.memory %q (%v)", soft, hard, err)
	}
}

// TestCertManagerOverlay: the serving Certificate's Secret is mounted where
// the webhook server reads, and both webhook configurations get the
// inject-ca-from annotation pointing at that Certificate.
func TestCertManagerOverlay(t *testing.T) {
	_, c := managerContainer(t)
	dir := certDirArg(t, c)
	def := readKustomization(t, configDir("default"))
	if len(def.Patches) != 1 {
		t.Fatalf("config/default patches: %v", def.Patches)
	}
	patch := testkit.ReadObjects(t, configDir("default", def.Patches[0].Path))[0]
	vols, _, _ := unstructured.NestedSlice(patch.Object, "spec", "template", "spec", "volumes")
	cs, _, _ := unstructured.NestedSlice(patch.Object, "spec", "template", "spec", "containers")
	if len(vols) != 1 || len(cs) != 1 {
		t.Fatalf("patch must add one volume to one container, got %d/%d", len(vols), len(cs))
	}
	secretName, _, _ := unstructured.NestedString(vols[0].(map[string]any), "secret", "secretName")
	if want := readCertManager(t).certificate("serving-cert").Spec.SecretName; secretName != want || want == "" {
		t.Errorf("Deployment mounts Secret %q, the Certificate writes %q", secretName, want)
	}
	mounts, _, _ := unstructured.NestedSlice(cs[0].(map[string]any), "volumeMounts")
	if len(mounts) != 1 || mounts[0].(map[string]any)["mountPath"] != dir || mounts[0].(map[string]any)["name"] != vols[0].(map[string]any)["name"] {
		t.Errorf("certificate volume not mounted at %s: %v", dir, mounts)
	}

	// The replacements must compose "<namespace>/<name>" of the serving
	// Certificate into the annotation of both configuration kinds.
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		parts := map[int]string{}
		for _, r := range def.Replacements {
			if r.Source.Kind != "Certificate" || r.Source.Name != "serving-cert" {
				continue
			}
			for _, tg := range r.Targets {
				if tg.Select.Kind == kind && slices.Contains(tg.FieldPaths, ".metadata.annotations.[cert-manager.io/inject-ca-from]") &&
					tg.Options.Delimiter == "/" && tg.Options.Create {
					parts[tg.Options.Index] = r.Source.FieldPath
				}
			}
		}
		if parts[0] != ".metadata.namespace" || parts[1] != ".metadata.name" {
			t.Errorf("%s: inject-ca-from is not <namespace>/<name> of the serving Certificate: %v", kind, parts)
		}
	}
}

// TestSelfManagedOverlay: no cert-manager objects, the mode flag set, and a
// writable folder at --webhook-cert-dir.
func TestSelfManagedOverlay(t *testing.T) {
	_, c := managerContainer(t)
	dir := certDirArg(t, c)
	k := readKustomization(t, configDir("default-selfmanaged"))
	if slices.Contains(k.Resources, "../certmanager") || len(k.Replacements) != 0 {
		t.Error("the self-managed overlay must not depend on cert-manager")
	}
	def := readKustomization(t, configDir("default"))
	if k.Namespace != def.Namespace || k.NamePrefix != def.NamePrefix {
		t.Error("both overlays must produce the same names (the operator's defaults and RBAC markers assume them)")
	}
	if len(k.Patches) != 1 {
		t.Fatalf("patches: %v", k.Patches)
	}
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	testkit.Must(t, yamlUnmarshal(readFile(t, configDir("default-selfmanaged", k.Patches[0].Path)), &ops))
	var flagSet, mounted, emptyDir bool
	for _, o := range ops {
		switch o.Path {
		case "/spec/template/spec/containers/0/args/-":
			flagSet = o.Op == "add" && o.Value == "--webhook-cert-mode="+certs.ModeSelfManaged
		// Appended (/-), so the base's /tmp mount and volume survive.
		case "/spec/template/spec/containers/0/volumeMounts/-":
			m := o.Value.(map[string]any)
			mounted = o.Op == "add" && m["mountPath"] == dir && m["readOnly"] != true
		case "/spec/template/spec/volumes/-":
			_, emptyDir = o.Value.(map[string]any)["emptyDir"]
		default:
			t.Errorf("patch op %s %s: the overlay may only append the flag, one mount and one volume", o.Op, o.Path)
		}
	}
	if !flagSet || !mounted || !emptyDir {
		t.Errorf("patch: mode flag %v, writable mount at %s %v, emptyDir %v", flagSet, dir, mounted, emptyDir)
	}
}

// TestOperatorDefaultsMatchInstalledNames: with only the mode flag (as the
// overlay passes it), the operator looks for the Service and webhook
// configurations under the names kustomize gives them, and its RBAC markers
// grant exactly those names.
func TestOperatorDefaultsMatchInstalledNames(t *testing.T) {
	def := readKustomization(t, configDir("default"))
	t.Setenv("POD_NAMESPACE", def.Namespace)
	var f certs.Flags
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	f.BindFlags(fs)
	testkit.Must(t, fs.Parse([]string{"--webhook-cert-mode=self-managed"}))
	testkit.Must(t, f.Complete())

	_, c := managerContainer(t)
	if f.Options.CertDir != certDirArg(t, c) {
		t.Errorf("default cert dir %s, Deployment passes %s", f.Options.CertDir, certDirArg(t, c))
	}
	if want := def.NamePrefix + "webhook-service"; f.Options.ServiceName != want {
		t.Errorf("default Service %s, installed %s", f.Options.ServiceName, want)
	}
	if f.Options.Namespace != def.Namespace {
		t.Errorf("namespace %s from POD_NAMESPACE, want %s", f.Options.Namespace, def.Namespace)
	}

	names := map[string]string{"MutatingWebhookConfiguration": "mutating-webhook-configuration", "ValidatingWebhookConfiguration": "validating-webhook-configuration"}
	if path := configDir("webhook", "manifests.yaml"); fileExists(path) {
		for _, o := range testkit.ReadObjects(t, path) {
			names[o.GetKind()] = o.GetName()
		}
	} else {
		t.Log("config/webhook/manifests.yaml missing; assuming controller-gen's default names")
	}
	wantM, wantV := def.NamePrefix+names["MutatingWebhookConfiguration"], def.NamePrefix+names["ValidatingWebhookConfiguration"]
	if !slices.Equal(f.Options.MutatingWebhookConfigurations, []string{wantM}) || !slices.Equal(f.Options.ValidatingWebhookConfigurations, []string{wantV}) {
		t.Errorf("default configurations %v %v, installed %s %s", f.Options.MutatingWebhookConfigurations, f.Options.ValidatingWebhookConfigurations, wantM, wantV)
	}

	src := string(readFile(t, filepath.Join(testkit.RepoRoot(), "certs", "rbac.go")))
	for res, want := range map[string]string{"mutatingwebhookconfigurations": wantM, "validatingwebhookconfigurations": wantV} {
		re := regexp.MustCompile(`resources=` + res + `,resourceNames=([^,]+),`)
		if m := re.FindStringSubmatch(src); m == nil || m[1] != want {
			t.Errorf("RBAC marker for %s grants %v, want %s", res, m, want)
		}
	}
	if !strings.Contains(src, "namespace="+def.Namespace+",resources=secrets") {
		t.Errorf("RBAC marker for secrets is not limited to %s", def.Namespace)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestManagerHighlyAvailable: the webhooks have failurePolicy Fail, so one
// replica restarting would refuse every write of the API group. Two
// replicas with leader election, and a PodDisruptionBudget that keeps one.
func TestManagerHighlyAvailable(t *testing.T) {
	deploy, c := managerContainer(t)
	// JSON numbers decode as float64.
	if n, _, _ := unstructured.NestedFieldNoCopy(deploy.Object, "spec", "replicas"); fmt.Sprint(n) != "2" {
		t.Errorf("manager replicas = %v, want 2", n)
	}
	if args, _, _ := unstructured.NestedStringSlice(c, "args"); !slices.Contains(args, "--leader-elect") {
		t.Error("two replicas without --leader-elect would both reconcile")
	}
	pdb := find(objectsOf(t, configDir("manager")), "PodDisruptionBudget", "controller-manager")
	if pdb == nil {
		t.Fatal("config/manager has no PodDisruptionBudget controller-manager")
	}
	if v, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "minAvailable"); fmt.Sprint(v) != "1" {
		t.Errorf("PodDisruptionBudget minAvailable = %v, want 1", v)
	}
	want, _, _ := unstructured.NestedStringMap(deploy.Object, "spec", "selector", "matchLabels")
	if got, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels"); !maps.Equal(got, want) {
		t.Errorf("PodDisruptionBudget selects %v, the Deployment %v", got, want)
	}
}
