package chart

import (
	"maps"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
)

// TestChartRendersTheReleaseInstallFiles: for each webhook TLS mode the
// chart (packaged by hack/release.sh chart, default values but the mode)
// renders exactly the objects of the release's install file, but the
// Namespace (helm install --create-namespace makes it): the same names,
// namespaces, specs, args and annotations. Labels differ by design (Helm's
// managed-by, instance and chart labels), so they are compared apart: every
// label the install file sets, but managed-by, is on the chart's object too
// (selectors, aggregation labels and pod-template labels among them).
func TestChartRendersTheReleaseInstallFiles(t *testing.T) {
	t.Parallel()
	f := fx(t)
	for _, tc := range []struct {
		file  string
		flags []string
	}{
		{"install.yaml", nil},
		{"install.yaml", []string{"--set", "tls.mode=selfManaged"}},
		{"install-cert-manager.yaml", append([]string{"--set", "tls.mode=certManager"}, certManagerAPI...)},
	} {
		t.Run(tc.file+strings.Join(tc.flags, " "), func(t *testing.T) {
			want := readFile(t, filepath.Join(f.dir, tc.file))
			want = slices.DeleteFunc(want, func(u *unstructured.Unstructured) bool { return u.GetKind() == "Namespace" })
			got := f.mustTemplate(t, tc.flags...)
			compare(t, tc.file, want, "the chart", got)
		})
	}
}

// TestChartMonitoringIsConfigMonitoring: with every monitoring toggle on,
// the chart adds exactly the objects of config/monitoring (PodMonitor,
// ServiceMonitor, PrometheusRule, the dashboard ConfigMap) to the default
// render.
func TestChartMonitoringIsConfigMonitoring(t *testing.T) {
	t.Parallel()
	f := fx(t)
	out, err := f.run(f.kubectl, "kustomize", filepath.Join(root, "config", "monitoring"))
	if err != nil {
		t.Fatal(err)
	}
	want := parse(t, "kubectl kustomize config/monitoring", []byte(out))
	base := index(t, "the chart", f.mustTemplate(t))
	flags := append([]string{"--set", "monitoring.podMonitor.enabled=true,monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true"}, monitoringAPI...)
	var got []*unstructured.Unstructured
	for _, u := range f.mustTemplate(t, flags...) {
		if _, inBase := base[key(u)]; !inBase {
			got = append(got, u)
		}
	}
	compare(t, "config/monitoring", want, "the chart's monitoring", got)
}

// TestChartCRDsAreTheReleaseCRDs: the packaged chart's crds/ (what helm
// install creates) are crds.yaml's CRDs.
func TestChartCRDsAreTheReleaseCRDs(t *testing.T) {
	t.Parallel()
	f := fx(t)
	out, err := f.run(f.helm, "show", "crds", f.chart)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, "crds.yaml", readFile(t, filepath.Join(f.dir, "crds.yaml")), "the chart's crds/", parse(t, "helm show crds", []byte(out)))
}

// TestChartCopiesAreInSync: the chart's copies of generated files are
// those hack/sync-chart.sh makes from config/ now. (make verify-generated
// catches a stale commit; this catches a stale working tree in a plain go
// test run.)
func TestChartCopiesAreInSync(t *testing.T) {
	t.Parallel()
	for src, dst := range map[string]string{
		"config/crd/bases":                      "charts/bind-operator/crds",
		"config/rbac/role.yaml":                 "charts/bind-operator/files/role.yaml",
		"config/webhook/manifests.yaml":         "charts/bind-operator/files/webhooks.yaml",
		"config/monitoring/dashboard.json":      "charts/bind-operator/files/dashboard.json",
		"config/monitoring/prometheusrule.yaml": "charts/bind-operator/files/prometheusrule.yaml",
		"LICENSE":                               "charts/bind-operator/LICENSE",
	} {
		out, err := exec.Command("diff", "-r", filepath.Join(root, src), filepath.Join(root, dst)).CombinedOutput()
		if err != nil {
			t.Errorf("%s differs from %s: run hack/sync-chart.sh (make manifests)\n%s", dst, src, out)
		}
	}
}

// compare requires the same set of objects on both sides and, object by
// object, the same content but labels, whose check is the subset rule of
// TestChartRendersTheReleaseInstallFiles.
func compare(t *testing.T, wantName string, want []*unstructured.Unstructured, gotName string, got []*unstructured.Unstructured) {
	t.Helper()
	w, g := index(t, wantName, want), index(t, gotName, got)
	for _, k := range keys(w) {
		if _, ok := g[k]; !ok {
			t.Errorf("%s has %s, %s does not", wantName, k, gotName)
		}
	}
	for _, k := range keys(g) {
		if _, ok := w[k]; !ok {
			t.Errorf("%s has %s, %s does not", gotName, k, wantName)
		}
	}
	for _, k := range keys(w) {
		gu, ok := g[k]
		if !ok {
			continue
		}
		wo, wl := normalise(w[k])
		goo, gl := normalise(gu)
		for where, labels := range wl {
			for name, value := range labels {
				if name == "app.kubernetes.io/managed-by" {
					continue
				}
				if v, ok := gl[where][name]; !ok || v != value {
					t.Errorf("%s: %s sets the label %s=%s on %s, %s %s", k, wantName, name, value, where, gotName, describe(gl[where], name))
				}
			}
		}
		if !reflect.DeepEqual(wo, goo) {
			t.Errorf("%s differs (- %s, + %s):\n%s", k, wantName, gotName, diff.Diff(wo, goo))
		}
	}
}

func describe(labels map[string]string, name string) string {
	if v, ok := labels[name]; ok {
		return "sets " + name + "=" + v
	}
	return "has only " + strings.Join(slices.Sorted(maps.Keys(labels)), ", ")
}

// normalise returns a copy of u without its labels and those of its pod
// template (returned apart, by where they were), and without the namespace
// of a cluster-scoped kind.
func normalise(u *unstructured.Unstructured) (map[string]any, map[string]map[string]string) {
	c := u.DeepCopy()
	labels := map[string]map[string]string{"metadata": c.GetLabels()}
	c.SetLabels(nil)
	if clusterScoped[c.GetKind()] {
		c.SetNamespace("")
	}
	if tl, found, _ := unstructured.NestedStringMap(c.Object, "spec", "template", "metadata", "labels"); found {
		labels["the pod template"] = tl
		unstructured.RemoveNestedField(c.Object, "spec", "template", "metadata", "labels")
	}
	return c.Object, labels
}
