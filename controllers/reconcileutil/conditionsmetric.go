package reconcileutil

import (
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// ConditionsMetric is the gauge of the objects by condition: what the
// shipped alerts (config/monitoring/prometheusrule.yaml) read for
// ConfigValid=False, a DNSRecord's Conflict=True and Ready=False
// (UpdateRefused), so an alert needs no kube-state-metrics custom
// resource configuration.
const ConditionsMetric = "bind_operator_conditions"

var conditionsDesc = prometheus.NewDesc(ConditionsMetric,
	"Objects of each kind by namespace (object_namespace) and by the type, status and reason of each of their status conditions (one object counts once per condition it reports).",
	[]string{"kind", "object_namespace", "condition", "status", "reason"}, nil)

// ConditionsCollector is the bind_operator_conditions gauge, counted from
// reader (the manager's cache) at each scrape, so a condition that
// changes, or an object deleted, shows at the next scrape whichever
// controller wrote it. Series are per namespace, never per object: a
// namespace's thousands of DNSRecords are a handful of series. cmd
// registers it in controller-runtime's registry. The objects' namespace is
// object_namespace: a scrape gives every series the operator pod's own
// namespace label, which would rename a "namespace" of ours to
// exported_namespace (honor_labels false, the Prometheus Operator's
// default).
func ConditionsCollector(reader client.Reader) prometheus.Collector {
	return conditionsCollector{reader: reader}
}

type conditionsCollector struct{ reader client.Reader }

func (c conditionsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- conditionsDesc }

type conditionKey struct{ kind, namespace, condition, status, reason string }

func (c conditionsCollector) Collect(ch chan<- prometheus.Metric) {
	eachCachedKind(c.reader, func(kind string, objs []client.Object) {
		counts := map[conditionKey]int{}
		for _, obj := range objs {
			for _, cond := range conditionsOf(obj) {
				counts[conditionKey{kind, obj.GetNamespace(), cond.Type, string(cond.Status), cond.Reason}]++
			}
		}
		for key, n := range counts {
			ch <- prometheus.MustNewConstMetric(conditionsDesc, prometheus.GaugeValue, float64(n),
				key.kind, key.namespace, key.condition, key.status, key.reason)
		}
	})
}

// conditionsOf is the status conditions of one of the nine kinds, nil for
// anything else.
func conditionsOf(obj client.Object) []metav1.Condition {
	switch o := obj.(type) {
	case *bindv1alpha1.BindCluster:
		return o.Status.Conditions
	case *bindv1alpha1.BindZone:
		return o.Status.Conditions
	case *bindv1alpha1.DNSRecord:
		return o.Status.Conditions
	case *bindv1alpha1.BindView:
		return o.Status.Conditions
	case *bindv1alpha1.BindTSIGKey:
		return o.Status.Conditions
	case *bindv1alpha1.BindACL:
		return o.Status.Conditions
	case *bindv1alpha1.BindCatalogZone:
		return o.Status.Conditions
	case *bindv1alpha1.BindPolicy:
		return o.Status.Conditions
	case *bindv1alpha1.BindDNSSECPolicy:
		return o.Status.Conditions
	}
	return nil
}
