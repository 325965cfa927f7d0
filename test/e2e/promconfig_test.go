package e2e

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// This file does, for the end-to-end test with a real Prometheus, what the
// Prometheus Operator does with the chart's monitoring objects: it turns
// the PodMonitor and the ServiceMonitor into scrape configurations with
// Kubernetes service discovery (the same relabelling: keep the selected
// pods or Services and the named port, then the namespace, pod, service,
// container, endpoint and job labels), writes the Secrets they reference
// to files, and the PrometheusRule's groups to a rule file. A monitor
// field it does not translate fails the decode: nothing is ignored.

// monitoringObjects are the chart's monitoring objects (helm template of
// the installed release's chart with every monitoring object enabled).
type monitoringObjects struct {
	PodMonitors     []monitor
	ServiceMonitors []monitor
	Rules           []byte // the PrometheusRule's spec, as a rule file
	Others          []*unstructured.Unstructured
}

// monitor is a PodMonitor or a ServiceMonitor, as far as the chart uses
// them (decoded strictly).
type monitor struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		NamespaceSelector *struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints           []monitorEndpoint `json:"endpoints,omitempty"`
		PodMetricsEndpoints []monitorEndpoint `json:"podMetricsEndpoints,omitempty"`
	} `json:"spec"`
}

type secretKey struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

type monitorEndpoint struct {
	Port          string `json:"port"`
	Scheme        string `json:"scheme,omitempty"`
	Path          string `json:"path,omitempty"`
	Interval      string `json:"interval,omitempty"`
	Authorization *struct {
		Type        string    `json:"type"`
		Credentials secretKey `json:"credentials"`
	} `json:"authorization,omitempty"`
	TLSConfig *struct {
		ServerName string `json:"serverName"`
		CA         struct {
			Secret secretKey `json:"secret"`
		} `json:"ca"`
	} `json:"tlsConfig,omitempty"`
}

// chartMonitoring renders the installed chart's monitoring objects.
func chartMonitoring(ctx context.Context, t *testing.T) monitoringObjects {
	t.Helper()
	out, err := env.Helm(ctx, "template", HelmRelease, env.Release.Chart(), "--namespace", OperatorNamespace,
		"--set", "monitoring.podMonitor.enabled=true",
		"--set", "monitoring.serviceMonitor.enabled=true",
		"--set", "monitoring.prometheusRule.enabled=true",
		// This cluster has no Prometheus Operator: helm template is told
		// its APIs exist, as for a cluster that has them.
		"--api-versions", "monitoring.coreos.com/v1/PodMonitor",
		"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
		"--api-versions", "monitoring.coreos.com/v1/PrometheusRule",
		"--show-only", "templates/monitoring.yaml")
	testkit.Must(t, err)
	var objs monitoringObjects
	dec := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out)))
	for {
		doc, err := dec.Read()
		if err == io.EOF {
			break
		}
		testkit.Must(t, err)
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil || len(u.Object) == 0 {
			continue
		}
		switch u.GetKind() {
		case "PodMonitor", "ServiceMonitor":
			var m monitor
			if err := yaml.UnmarshalStrict(doc, &m); err != nil {
				t.Fatalf("the chart's %s %s uses a field this test does not translate into a scrape configuration: %v", u.GetKind(), u.GetName(), err)
			}
			if u.GetKind() == "PodMonitor" {
				objs.PodMonitors = append(objs.PodMonitors, m)
			} else {
				objs.ServiceMonitors = append(objs.ServiceMonitors, m)
			}
		case "PrometheusRule":
			spec, _, _ := unstructured.NestedMap(u.Object, "spec")
			objs.Rules, err = yaml.Marshal(spec)
			testkit.Must(t, err)
		default:
			objs.Others = append(objs.Others, &u)
		}
	}
	if len(objs.PodMonitors) == 0 || len(objs.ServiceMonitors) == 0 || objs.Rules == nil {
		t.Fatalf("the chart rendered %d PodMonitors, %d ServiceMonitors and rules %t with monitoring enabled:\n%s",
			len(objs.PodMonitors), len(objs.ServiceMonitors), objs.Rules != nil, out)
	}
	return objs
}

// invalidLabelChars are what Prometheus replaces with _ in the meta
// label of a Kubernetes label.
var invalidLabelChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// labelName is a Kubernetes label key as a Prometheus meta label suffix.
func labelName(k string) string { return invalidLabelChars.ReplaceAllString(k, "_") }

// scrapeConfigs translates the monitors into Prometheus scrape
// configurations, discovering from the API server of kubeconfig and with
// the referenced Secrets' keys written to files under dir. A Secret or key
// not there (yet) is an error.
func scrapeConfigs(ctx context.Context, objs monitoringObjects, kubeconfig, dir string) ([]map[string]any, error) {
	var out []map[string]any
	secretFile := func(ns string, ref secretKey) (string, error) {
		s, err := env.Cluster.Client().CoreV1().Secrets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if len(s.Data[ref.Key]) == 0 {
			return "", fmt.Errorf("secret %s/%s has no %q", ns, ref.Name, ref.Key)
		}
		p := filepath.Join(dir, ns+"-"+ref.Name+"-"+ref.Key)
		return p, os.WriteFile(p, s.Data[ref.Key], 0o600)
	}
	for _, kind := range []struct {
		role, prefix, meta string
		monitors           []monitor
	}{
		{"pod", "podMonitor", "pod", objs.PodMonitors},
		{"endpoints", "serviceMonitor", "service", objs.ServiceMonitors},
	} {
		for _, m := range kind.monitors {
			eps := m.Spec.PodMetricsEndpoints
			if kind.role == "endpoints" {
				eps = m.Spec.Endpoints
			}
			for i, ep := range eps {
				sd := map[string]any{"role": kind.role, "kubeconfig_file": kubeconfig}
				switch ns := m.Spec.NamespaceSelector; {
				case ns != nil && ns.Any:
				case ns != nil && len(ns.MatchNames) > 0:
					sd["namespaces"] = map[string]any{"names": ns.MatchNames}
				default:
					sd["namespaces"] = map[string]any{"names": []string{m.Metadata.Namespace}}
				}
				var relabel []map[string]any
				for k, v := range m.Spec.Selector.MatchLabels {
					relabel = append(relabel, map[string]any{
						"action":        "keep",
						"source_labels": []string{"__meta_kubernetes_" + kind.meta + "_label_" + labelName(k), "__meta_kubernetes_" + kind.meta + "_labelpresent_" + labelName(k)},
						"regex":         "(" + regexp.QuoteMeta(v) + ");true",
					})
				}
				portLabel := "__meta_kubernetes_pod_container_port_name"
				if kind.role == "endpoints" {
					portLabel = "__meta_kubernetes_endpoint_port_name"
				}
				relabel = append(relabel,
					map[string]any{"action": "keep", "source_labels": []string{portLabel}, "regex": regexp.QuoteMeta(ep.Port)},
					map[string]any{"source_labels": []string{"__meta_kubernetes_namespace"}, "target_label": "namespace"},
					map[string]any{"source_labels": []string{"__meta_kubernetes_pod_name"}, "target_label": "pod"},
					map[string]any{"source_labels": []string{"__meta_kubernetes_pod_container_name"}, "target_label": "container"},
					map[string]any{"target_label": "endpoint", "replacement": ep.Port},
				)
				// The job: the Service's name for a ServiceMonitor,
				// namespace/name of the PodMonitor for a PodMonitor.
				if kind.role == "endpoints" {
					relabel = append(relabel,
						map[string]any{"source_labels": []string{"__meta_kubernetes_service_name"}, "target_label": "service"},
						map[string]any{"source_labels": []string{"__meta_kubernetes_service_name"}, "target_label": "job"})
				} else {
					relabel = append(relabel, map[string]any{"target_label": "job", "replacement": m.Metadata.Namespace + "/" + m.Metadata.Name})
				}
				sc := map[string]any{
					"job_name":              fmt.Sprintf("%s/%s/%s/%d", kind.prefix, m.Metadata.Namespace, m.Metadata.Name, i),
					"kubernetes_sd_configs": []any{sd},
					"relabel_configs":       relabel,
					"metrics_path":          cmp.Or(ep.Path, "/metrics"),
					"scheme":                cmp.Or(ep.Scheme, "http"),
				}
				if ep.Interval != "" {
					sc["scrape_interval"] = ep.Interval
				}
				if a := ep.Authorization; a != nil {
					f, err := secretFile(m.Metadata.Namespace, a.Credentials)
					if err != nil {
						return nil, err
					}
					sc["authorization"] = map[string]any{"type": cmp.Or(a.Type, "Bearer"), "credentials_file": f}
				}
				if tc := ep.TLSConfig; tc != nil {
					f, err := secretFile(m.Metadata.Namespace, tc.CA.Secret)
					if err != nil {
						return nil, err
					}
					sc["tls_config"] = map[string]any{"server_name": tc.ServerName, "ca_file": f}
				}
				out = append(out, sc)
			}
		}
	}
	return out, nil
}

// hasOnce replaces old with new in s, failing when old is not there
// exactly once: an adjustment of the shipped rules must not miss silently.
func hasOnce(t *testing.T, s, old, new, what string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("%s: %q occurs %d times, want once: update the test to the shipped rule", what, old, n)
	}
	return strings.Replace(s, old, new, 1)
}
