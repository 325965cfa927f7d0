package clusters

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
)

// TestMonitoringOverlayMatches: the PodMonitor of config/monitoring selects
// the BIND pods the operator builds and scrapes a port they name, and its
// ServiceMonitor selects the operator's metrics Service on a port it has,
// so the optional overlay keeps working when either side changes.
func TestMonitoringOverlayMatches(t *testing.T) {
	g := NewWithT(t)
	type monitor struct {
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			PodMetricsEndpoints []struct {
				Port string `json:"port"`
			} `json:"podMetricsEndpoints"`
			Endpoints []struct {
				Port string `json:"port"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	read := func(path string, into any) {
		b, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(yaml.Unmarshal(b, into)).To(Succeed(), path)
	}
	var pm, sm monitor
	read("../../config/monitoring/podmonitor.yaml", &pm)
	read("../../config/monitoring/servicemonitor.yaml", &sm)

	c := &bindv1alpha1.BindCluster{}
	c.Name, c.Namespace = "dns", "team"
	pod := buildStatefulSet(c, ClusterOptions{}, render.DefaultPaths(), "h").Spec.Template
	for k, v := range pm.Spec.Selector.MatchLabels {
		g.Expect(pod.Labels).To(HaveKeyWithValue(k, v), "the PodMonitor selects BIND pods by %s=%s", k, v)
	}
	var ports []string
	for _, ctr := range pod.Spec.Containers {
		for _, p := range ctr.Ports {
			ports = append(ports, p.Name)
		}
	}
	g.Expect(pm.Spec.PodMetricsEndpoints).NotTo(BeEmpty())
	for _, e := range pm.Spec.PodMetricsEndpoints {
		g.Expect(ports).To(ContainElement(e.Port), "the PodMonitor scrapes a port the BIND pods name")
	}

	var svc corev1.Service
	read("../../config/manager/metrics_service.yaml", &svc)
	for k, v := range sm.Spec.Selector.MatchLabels {
		g.Expect(svc.Labels).To(HaveKeyWithValue(k, v), "the ServiceMonitor selects the metrics Service by %s=%s", k, v)
	}
	g.Expect(sm.Spec.Endpoints).NotTo(BeEmpty())
	for _, e := range sm.Spec.Endpoints {
		g.Expect(svc.Spec.Ports).To(ContainElement(HaveField("Name", e.Port)))
	}
}
