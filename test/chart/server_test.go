package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestChartServerSide: a real kube-apiserver with the chart's CRDs and the
// real CRDs of cert-manager and the Prometheus Operator accepts everything
// the chart renders, in both TLS modes and with monitoring on (kubectl
// apply --server-side --dry-run=server: every object is defaulted,
// validated against its schema and admitted, nothing is stored). Then
// helm itself installs the chart in cert-manager mode, learning from the
// API server that cert-manager is there, and uninstalls it: the CRDs stay.
func TestChartServerSide(t *testing.T) {
	t.Parallel()
	env, err := testkit.NewEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	// The CRDs helm install creates, not config/crd's (they are the same:
	// TestChartCRDsAreTheReleaseCRDs).
	env.CRDDirectoryPaths = []string{filepath.Join(root, "charts", "bind-operator", "crds"), filepath.Join(root, "test", "chart", "testdata", "prometheus-operator")}
	crds, err := certManagerCRDs()
	if err != nil {
		t.Fatal(err)
	}
	env.CRDs = crds
	if _, err := env.Start(); err != nil {
		t.Fatalf("starting kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	// The other tests build the fixture while the API server starts.
	f := fx(t)
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, kc, kubeconfig)
	kubectl := func(args ...string) (string, error) {
		return f.run(f.kubectl, append([]string{"--kubeconfig", kc}, args...)...)
	}
	if _, err := kubectl("create", "namespace", namespace); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		desc  string
		flags []string
	}{
		{"selfManaged", nil},
		{"certManager", append([]string{"--set", "tls.mode=certManager"}, certManagerAPI...)},
		{"certManager with an issuer", append([]string{"--set", "tls.mode=certManager,tls.certManager.issuerRef.name=corp-ca,tls.certManager.issuerRef.kind=ClusterIssuer"}, certManagerAPI...)},
		{"monitoring", append([]string{"--set", "monitoring.podMonitor.enabled=true,monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true"}, monitoringAPI...)},
	} {
		t.Run("dry run "+tc.desc, func(t *testing.T) {
			out, err := f.template(tc.flags...)
			if err != nil {
				t.Fatal(err)
			}
			objs := parse(t, tc.desc, []byte(out))
			manifest := filepath.Join(t.TempDir(), "chart.yaml")
			writeFile(t, manifest, []byte(out))
			applied, err := kubectl("apply", "--server-side", "--dry-run=server", "-f", manifest)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(applied, "serverside-applied (server dry run)"); n != len(objs) {
				t.Errorf("the API server took %d of the %d objects:\n%s", n, len(objs), applied)
			}
		})
	}

	t.Run("helm install and uninstall", func(t *testing.T) {
		helm := func(args ...string) (string, error) {
			return f.run(f.helm, append(args, "--kubeconfig", kc, "--namespace", namespace)...)
		}
		// No --api-versions: helm asks the API server, which has
		// cert-manager's CRDs.
		if out, err := helm("install", release, f.chart, "--set", "tls.mode=certManager"); err != nil {
			t.Fatal(err)
		} else if !strings.Contains(out, "bind-operator "+version) {
			t.Errorf("the notes do not name the version:\n%s", out)
		}
		for _, obj := range []string{"deployment/bind-operator-controller-manager", "certificate/bind-operator-serving-cert", "validatingwebhookconfiguration/bind-operator-validating-webhook-configuration"} {
			if _, err := kubectl("get", "-n", namespace, obj); err != nil {
				t.Errorf("after helm install: %v", err)
			}
		}

		// The next version's chart, whose CRDs differ: helm upgrade leaves
		// the CRDs as they are; the README's procedure (apply the new
		// CRDs server-side, taking over the fields helm install applied,
		// then helm upgrade) updates them.
		next := nextChart(t, f)
		crdVersion := func() string {
			out, err := kubectl("get", "crd", "bindacls.bind.unkin.net", "-o", `jsonpath={.metadata.annotations.controller-gen\.kubebuilder\.io/version}`)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		before := crdVersion()
		if _, err := helm("upgrade", release, next, "--set", "tls.mode=certManager"); err != nil {
			t.Fatal(err)
		}
		if got := crdVersion(); got != before {
			t.Errorf("helm upgrade changed a CRD: controller-gen version %q, was %q", got, before)
		}
		crds, err := f.run(f.helm, "show", "crds", next)
		if err != nil {
			t.Fatal(err)
		}
		nextCRDs := filepath.Join(t.TempDir(), "crds.yaml")
		writeFile(t, nextCRDs, []byte(crds))
		if _, err := kubectl("apply", "--server-side", "-f", nextCRDs); err == nil || !strings.Contains(err.Error(), "conflict") {
			t.Errorf("kubectl apply --server-side of CRDs helm installed, without --force-conflicts: %v, want a conflict (the README says to force)", err)
		}
		if _, err := kubectl("apply", "--server-side", "--force-conflicts", "-f", nextCRDs); err != nil {
			t.Fatal(err)
		}
		if got := crdVersion(); got != "vNEXT" {
			t.Errorf("the new CRDs were not applied: controller-gen version %q", got)
		}

		if _, err := helm("uninstall", release); err != nil {
			t.Fatal(err)
		}
		if out, err := kubectl("get", "-n", namespace, "deployment/bind-operator-controller-manager", "--ignore-not-found"); err != nil || out != "" {
			t.Errorf("the Deployment outlived helm uninstall: %q %v", out, err)
		}
		if _, err := kubectl("get", "crd", "bindzones.bind.unkin.net", "dnsrecords.bind.unkin.net"); err != nil {
			t.Errorf("helm uninstall removed the CRDs: %v", err)
		}
	})
}

// certManagerCRDs reads the cert-manager.io CRDs from the zip of the
// cert-manager module in go.mod (as test/certs does), so nothing is
// fetched on a machine that has built the project.
func certManagerCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/cert-manager/cert-manager")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download github.com/cert-manager/cert-manager: %w", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download printed no module folder: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(mod.Dir, "deploy", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no cert-manager CRDs in %s: %v", mod.Dir, err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		// The files are plain YAML today, but cert-manager's Helm chart is
		// built from them: drop any line holding a template action.
		var b bytes.Buffer
		for _, line := range strings.SplitAfter(string(raw), "\n") {
			if !strings.Contains(line, "{{") {
				b.WriteString(line)
			}
		}
		for _, doc := range testkit.SplitYAML(b.Bytes()) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(doc, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			if crd.Kind == "CustomResourceDefinition" {
				crds = append(crds, crd)
			}
		}
	}
	return crds, nil
}

// nextChart is the packaged chart unpacked with one change to its CRDs,
// as the next release's would have.
func nextChart(t *testing.T, f *fixture) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := f.run("tar", "-xzf", f.chart, "-C", dir); err != nil {
		t.Fatal(err)
	}
	crd := filepath.Join(dir, "bind-operator", "crds", "bind.unkin.net_bindacls.yaml")
	raw, err := os.ReadFile(crd)
	if err != nil {
		t.Fatal(err)
	}
	next := regexp.MustCompile(`(?m)^(\s+controller-gen\.kubebuilder\.io/version:).*$`).ReplaceAll(raw, []byte("${1} vNEXT"))
	if bytes.Equal(next, raw) {
		t.Fatalf("%s has no controller-gen version annotation to change", crd)
	}
	writeFile(t, crd, next)
	return filepath.Join(dir, "bind-operator")
}
