package chart

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestChartLints: helm lint --strict passes for the chart as committed and
// as packaged, in both TLS modes and with monitoring on. (Lint renders
// with no cluster and ignores `fail`, so the capability checks do not
// trip it.)
func TestChartLints(t *testing.T) {
	t.Parallel()
	f := fx(t)
	for _, chart := range []string{filepath.Join(root, "charts", "bind-operator"), f.chart} {
		for _, set := range []string{
			"tls.mode=selfManaged",
			"tls.mode=certManager",
			"tls.mode=certManager,tls.certManager.issuerRef.name=ca,tls.certManager.issuerRef.kind=ClusterIssuer",
			"monitoring.podMonitor.enabled=true,monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true",
		} {
			if out, err := f.run(f.helm, "lint", "--strict", chart, "--set", set); err != nil {
				t.Errorf("helm lint --strict %s --set %s: %v\n%s", chart, set, err, out)
			}
		}
	}
}

// TestChartRefusesBadValues: a value of the wrong type, an unknown key or
// an unknown mode fails the install with the value's path, and a mode the
// cluster lacks the API for fails with a sentence that says what to do.
func TestChartRefusesBadValues(t *testing.T) {
	t.Parallel()
	f := fx(t)
	for _, tc := range []struct {
		desc  string
		flags []string
		want  []string
	}{
		{"replicaCount not a number", []string{"--set", "replicaCount=two"}, []string{"/replicaCount", "want integer"}},
		{"no replicas", []string{"--set", "replicaCount=0"}, []string{"/replicaCount", "minimum"}},
		{"resources a string", []string{"--set", "resources=big"}, []string{"/resources", "want object"}},
		{"resources a bad quantity", []string{"--set", "resources.limits.memory=lots"}, []string{"/resources/limits/memory"}},
		{"unknown TLS mode", []string{"--set", "tls.mode=acme"}, []string{"/tls/mode", "selfManaged", "certManager"}},
		{"unknown top-level key", []string{"--set", "replicas=3"}, []string{"replicas", "not allowed"}},
		{"misspelt nested key", []string{"--set", "image.tagg=v1"}, []string{"/image", "tagg", "not allowed"}},
		{"unknown pull policy", []string{"--set", "image.pullPolicy=Sometimes"}, []string{"/image/pullPolicy"}},
		{"issuerRef without a name", []string{"--set", "tls.mode=certManager,tls.certManager.issuerRef.kind=ClusterIssuer"}, []string{"/tls/certManager/issuerRef", "name"}},
		{"allowedImages a string", []string{"--set", "allowedImages=foo"}, []string{"/allowedImages", "want array"}},
		{"podCIDRs not CIDRs", []string{"--set", "podCIDRs={10.0.0.1}"}, []string{"/podCIDRs/0"}},
		{"extraArgs not flags", []string{"--set", "extraArgs={debug}"}, []string{"/extraArgs/0"}},
		{"monitoring toggle not a boolean", []string{"--set-string", "monitoring.podMonitor.enabled=yes"}, []string{"/monitoring/podMonitor/enabled", "want boolean"}},
		{"certManager without cert-manager", []string{"--set", "tls.mode=certManager"}, []string{
			"tls.mode=certManager needs cert-manager, but this cluster has no cert-manager.io/v1 API (CRDs certificates.cert-manager.io and issuers.cert-manager.io): install cert-manager first, or use tls.mode=selfManaged.",
		}},
		{"podMonitor without the Prometheus Operator", []string{"--set", "monitoring.podMonitor.enabled=true"}, []string{
			"monitoring.podMonitor.enabled needs the Prometheus Operator", "podmonitors.monitoring.coreos.com", "install the Prometheus Operator first",
		}},
		{"serviceMonitor without the Prometheus Operator", []string{"--set", "monitoring.serviceMonitor.enabled=true"}, []string{
			"monitoring.serviceMonitor.enabled needs the Prometheus Operator", "servicemonitors.monitoring.coreos.com",
		}},
		{"prometheusRule without the Prometheus Operator", []string{"--set", "monitoring.prometheusRule.enabled=true"}, []string{
			"monitoring.prometheusRule.enabled needs the Prometheus Operator", "prometheusrules.monitoring.coreos.com",
		}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			out, err := f.template(tc.flags...)
			if err == nil {
				t.Fatalf("helm template %s rendered:\n%.400s", strings.Join(tc.flags, " "), out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestChartValuesLandWhereExpected: each value changes what it should.
func TestChartValuesLandWhereExpected(t *testing.T) {
	t.Parallel()
	f := fx(t)

	t.Run("images default to the chart's appVersion", func(t *testing.T) {
		objs := f.mustTemplate(t)
		if got, want := manager(t, objs)["image"], "git.unkin.net/unkin/bind-operator:"+version; got != want {
			t.Errorf("image %v, want %s", got, want)
		}
		a := args(t, objs)
		for _, w := range []string{"--agent-image=git.unkin.net/unkin/bind-operator:" + version, "--bind-image=git.unkin.net/unkin/bind-operator-bind9:" + version} {
			if !slices.Contains(a, w) {
				t.Errorf("args %q lack %s", a, w)
			}
		}
		for _, absent := range []string{"--allowed-images", "--pod-cidrs", "--metrics-namespace-selector"} {
			if slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, absent) }) {
				t.Errorf("args %q pass %s by default", a, absent)
			}
		}
	})

	t.Run("image", func(t *testing.T) {
		objs := f.mustTemplate(t, "--set", "image.repository=registry.example/ops/bind-operator,image.tag=v9.9.9,image.pullPolicy=Always")
		c := manager(t, objs)
		if c["image"] != "registry.example/ops/bind-operator:v9.9.9" || c["imagePullPolicy"] != "Always" {
			t.Errorf("image %v pull policy %v", c["image"], c["imagePullPolicy"])
		}
		if a := args(t, objs); !slices.Contains(a, "--agent-image=registry.example/ops/bind-operator:v9.9.9") {
			t.Errorf("args %q: the agent image is not the operator's", a)
		}
	})

	t.Run("bindImage", func(t *testing.T) {
		objs := f.mustTemplate(t, "--set", "bindImage.repository=registry.example/ops/bind9,bindImage.tag=9.18.49")
		if a := args(t, objs); !slices.Contains(a, "--bind-image=registry.example/ops/bind9:9.18.49") {
			t.Errorf("args %q", a)
		}
		if c := manager(t, objs); c["image"] != "git.unkin.net/unkin/bind-operator:"+version {
			t.Errorf("the BIND image moved the operator's: %v", c["image"])
		}
	})

	t.Run("replicaCount", func(t *testing.T) {
		objs := f.mustTemplate(t, "--set", "replicaCount=3")
		d := find(t, objs, "Deployment", "bind-operator-controller-manager")
		if r, _, _ := unstructured.NestedFloat64(d.Object, "spec", "replicas"); r != 3 {
			t.Errorf("replicas %v", r)
		}
		if !has(objs, "PodDisruptionBudget", "bind-operator-controller-manager") {
			t.Error("no PodDisruptionBudget with three replicas")
		}
		// One replica gets no budget: minAvailable 1 would block every
		// node drain.
		if objs := f.mustTemplate(t, "--set", "replicaCount=1"); has(objs, "PodDisruptionBudget", "bind-operator-controller-manager") {
			t.Error("a PodDisruptionBudget for a single replica")
		}
	})

	t.Run("resources and goMemLimit", func(t *testing.T) {
		objs := f.mustTemplate(t, "--set", "resources.limits.memory=1Gi,resources.requests.cpu=100m,goMemLimit=512MiB")
		c := manager(t, objs)
		want := map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "1Gi"}, "requests": map[string]any{"cpu": "100m", "memory": "64Mi"}}
		if !reflect.DeepEqual(c["resources"], want) {
			t.Errorf("resources %v, want %v", c["resources"], want)
		}
		if env := c["env"].([]any); !slices.ContainsFunc(env, func(e any) bool {
			m := e.(map[string]any)
			return m["name"] == "GOMEMLIMIT" && m["value"] == "512MiB"
		}) {
			t.Errorf("env %v lacks GOMEMLIMIT=512MiB", env)
		}
	})

	t.Run("scheduling", func(t *testing.T) {
		values := writeValues(t, map[string]any{
			"nodeSelector": map[string]any{"kubernetes.io/os": "linux", "node-role.example/infra": ""},
			"tolerations":  []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}},
			"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "zone", "operator": "In", "values": []any{"a"}}}}},
			}}},
		})
		d := find(t, f.mustTemplate(t, "-f", values), "Deployment", "bind-operator-controller-manager")
		spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
		if want := map[string]any{"kubernetes.io/os": "linux", "node-role.example/infra": ""}; !reflect.DeepEqual(spec["nodeSelector"], want) {
			t.Errorf("nodeSelector %v", spec["nodeSelector"])
		}
		if want := []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}}; !reflect.DeepEqual(spec["tolerations"], want) {
			t.Errorf("tolerations %v", spec["tolerations"])
		}
		if _, ok, _ := unstructured.NestedSlice(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"); !ok {
			t.Errorf("affinity %v", spec["affinity"])
		}
		if _, ok := spec["topologySpreadConstraints"]; !ok {
			t.Error("the affinity replaced the spread over nodes")
		}
	})

	t.Run("operator flags", func(t *testing.T) {
		objs := f.mustTemplate(t, "--set", "allowedImages={registry.example/ops/,git.unkin.net/unkin/},podCIDRs={10.244.0.0/16,fd00:10:244::/56}",
			"--set", "metricsNamespaceSelector=kubernetes.io/metadata.name=monitoring",
			"--set", "extraArgs={--zone-resync-period=5m,--zap-log-level=debug}")
		a := args(t, objs)
		want := []string{
			"--allowed-images=registry.example/ops/,git.unkin.net/unkin/",
			"--pod-cidrs=10.244.0.0/16,fd00:10:244::/56",
			"--metrics-namespace-selector=kubernetes.io/metadata.name=monitoring",
			"--zone-resync-period=5m",
			"--zap-log-level=debug",
		}
		if !slices.Equal(a[len(a)-len(want):], want) {
			t.Errorf("args %q, want them to end with %q", a, want)
		}
	})

	t.Run("quota", func(t *testing.T) {
		// 0 is a value (no limit), not "unset"; a number from JSON or a
		// values file arrives as a float and is written as an integer.
		a := args(t, f.mustTemplate(t, "--set", "quota.namespaceObjects=0,quota.zoneBytes=4Mi",
			"--set-json", "quota.zoneRecords=50000"))
		for _, want := range []string{"--quota-namespace-objects=0", "--quota-zone-bytes=4Mi", "--quota-zone-records=50000"} {
			if !slices.Contains(a, want) {
				t.Errorf("args %q lack %q", a, want)
			}
		}
		for _, flag := range a {
			if strings.HasPrefix(flag, "--quota-namespace-bytes") {
				t.Errorf("an unset quota was passed: %q", flag)
			}
		}
		if _, err := f.template("--set", "quota.zoneRecords=-1"); err == nil {
			t.Error("a negative quota was accepted by the values schema")
		}
	})

	t.Run("tls.certManager.issuerRef", func(t *testing.T) {
		flags := append([]string{"--set", "tls.mode=certManager,tls.certManager.issuerRef.name=corp-ca,tls.certManager.issuerRef.kind=ClusterIssuer,tls.certManager.issuerRef.group=cert-manager.io"}, certManagerAPI...)
		objs := f.mustTemplate(t, flags...)
		var certManagerObjects []string
		for _, u := range objs {
			if u.GroupVersionKind().Group == "cert-manager.io" {
				certManagerObjects = append(certManagerObjects, u.GetKind()+" "+u.GetName())
			}
		}
		if want := []string{"Certificate bind-operator-serving-cert"}; !slices.Equal(certManagerObjects, want) {
			t.Errorf("cert-manager objects %q, want the serving Certificate alone", certManagerObjects)
		}
		cert := find(t, objs, "Certificate", "bind-operator-serving-cert")
		ref, _, _ := unstructured.NestedMap(cert.Object, "spec", "issuerRef")
		if want := map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}; !reflect.DeepEqual(ref, want) {
			t.Errorf("issuerRef %v, want %v", ref, want)
		}
		for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
			u := find(t, objs, kind, "bind-operator-"+map[string]string{"MutatingWebhookConfiguration": "mutating", "ValidatingWebhookConfiguration": "validating"}[kind]+"-webhook-configuration")
			if got := u.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != namespace+"/bind-operator-serving-cert" {
				t.Errorf("%s inject-ca-from %q", kind, got)
			}
		}
		if a := args(t, objs); slices.Contains(a, "--webhook-cert-mode=self-managed") {
			t.Errorf("args %q: self-managed TLS with cert-manager", a)
		}
	})

	t.Run("the release namespace", func(t *testing.T) {
		out, err := f.run(f.helm, "template", release, f.chart, "--namespace", "dns-system")
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range parse(t, "helm template -n dns-system", []byte(out)) {
			if !clusterScoped[u.GetKind()] && u.GetNamespace() != "dns-system" {
				t.Errorf("%s in namespace %q", key(u), u.GetNamespace())
			}
			if strings.Contains(mustYAML(t, u.Object), namespace) {
				t.Errorf("%s names %s:\n%s", key(u), namespace, mustYAML(t, u.Object))
			}
		}
	})

	t.Run("monitoring", func(t *testing.T) {
		for _, tc := range []struct {
			set  string
			want []string
		}{
			{"monitoring.podMonitor.enabled=true", []string{"PodMonitor bind-operator-bind-clusters"}},
			{"monitoring.serviceMonitor.enabled=true", []string{"ServiceMonitor bind-operator-controller-manager"}},
			{"monitoring.prometheusRule.enabled=true", []string{"PrometheusRule bind-operator-alerts"}},
			{"monitoring.dashboard.enabled=true", []string{"ConfigMap bind-operator-dashboard"}},
		} {
			objs := f.mustTemplate(t, append([]string{"--set", tc.set}, monitoringAPI...)...)
			var got []string
			for _, u := range objs {
				switch u.GetKind() {
				case "PodMonitor", "ServiceMonitor", "PrometheusRule", "ConfigMap":
					got = append(got, u.GetKind()+" "+u.GetName())
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("--set %s: %q, want %q", tc.set, got, tc.want)
			}
		}
		objs := f.mustTemplate(t, append([]string{"--set", "monitoring.serviceMonitor.enabled=true,monitoring.serviceMonitor.labels.release=kube-prometheus-stack"}, monitoringAPI...)...)
		if l := find(t, objs, "ServiceMonitor", "bind-operator-controller-manager").GetLabels(); l["release"] != "kube-prometheus-stack" || l["app.kubernetes.io/name"] != "bind-operator" {
			t.Errorf("ServiceMonitor labels %v", l)
		}
		// The defaults render none of them, even for a cluster that has
		// the Prometheus Operator.
		for _, u := range f.mustTemplate(t, monitoringAPI...) {
			switch u.GetKind() {
			case "PodMonitor", "ServiceMonitor", "ConfigMap":
				t.Errorf("%s by default", key(u))
			}
		}
	})
}

func writeValues(t *testing.T, values map[string]any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	writeFile(t, path, []byte(mustYAML(t, values)))
	return path
}

func mustYAML(t testing.TB, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
