package clusters

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
)

func dnsServicePorts(c *bindv1alpha1.BindCluster) []corev1.ServicePort {
	p := clusterpods.DNSPort(c)
	return []corev1.ServicePort{
		{Name: "dns-udp", Port: clusterpods.ServicePort, TargetPort: intstr.FromInt32(p), Protocol: corev1.ProtocolUDP},
		{Name: "dns-tcp", Port: clusterpods.ServicePort, TargetPort: intstr.FromInt32(p), Protocol: corev1.ProtocolTCP},
	}
}

func withLabels(base map[string]string, extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range extra {
		out[k] = v
	}
	for k, v := range base {
		out[k] = v
	}
	return out
}

// buildServices returns the headless Service of the StatefulSet, the primary
// Service (the stable transfer address: its ClusterIP, never a pod IP, is
// what restart-scoped config may name) and the query Service.
func buildServices(c *bindv1alpha1.BindCluster) []*corev1.Service {
	headless := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: clusterpods.HeadlessSvcName(c), Namespace: c.Namespace, Labels: clusterpods.ObjectLabels(c)},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 clusterpods.SelectorLabels(c),
			Ports:                    dnsServicePorts(c),
			PublishNotReadyAddresses: true,
		},
	}
	primarySelector := clusterpods.SelectorLabels(c)
	primarySelector[appsv1.StatefulSetPodNameLabel] = clusterpods.PrimaryPodName(c)
	primary := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: clusterpods.PrimarySvcName(c), Namespace: c.Namespace,
			Labels:      withLabels(clusterpods.ObjectLabels(c), c.Spec.PrimaryService.Labels),
			Annotations: c.Spec.PrimaryService.Annotations,
		},
		Spec: corev1.ServiceSpec{
			Type:     serviceType(c.Spec.PrimaryService.Type),
			Selector: primarySelector,
			Ports:    dnsServicePorts(c),
			// Secondaries must reach the primary while it starts, before
			// every zone is loaded: transfers retry on their own.
			PublishNotReadyAddresses: true,
		},
	}
	query := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: clusterpods.QuerySvcName(c), Namespace: c.Namespace,
			Labels:      withLabels(clusterpods.ObjectLabels(c), c.Spec.QueryService.Labels),
			Annotations: c.Spec.QueryService.Annotations,
		},
		Spec: corev1.ServiceSpec{
			Type:     serviceType(c.Spec.QueryService.Type),
			Selector: clusterpods.SelectorLabels(c),
			Ports:    dnsServicePorts(c),
		},
	}
	return []*corev1.Service{headless, primary, query}
}

func serviceType(t corev1.ServiceType) corev1.ServiceType {
	if t == "" {
		return corev1.ServiceTypeClusterIP
	}
	return t
}

// buildPDB keeps all but one pod up during voluntary disruptions.
func buildPDB(c *bindv1alpha1.BindCluster) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: clusterpods.ObjectLabels(c)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: clusterpods.SelectorLabels(c)},
		},
	}
}

// buildNetworkPolicy admits DNS from anywhere, the metrics port from the
// pods of the monitoring namespaces (opts.MetricsNamespaces), and the
// agent's API only from the operator's pods. The kubelet's probes on the
// metrics port come from the node, which network policy implementations
// admit.
func buildNetworkPolicy(c *bindv1alpha1.BindCluster, opts ClusterOptions) *networkingv1.NetworkPolicy {
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	agentPort, metricsPort := c.Spec.Ports.Agent, c.Spec.Ports.Metrics
	if agentPort == 0 {
		agentPort = bindv1alpha1.DefaultAgentPort
	}
	if metricsPort == 0 {
		metricsPort = bindv1alpha1.DefaultMetricsPort
	}
	dns := intstr.FromInt32(clusterpods.DNSPort(c))
	agent := intstr.FromInt32(agentPort)
	metrics := intstr.FromInt32(metricsPort)
	operatorPeer := networkingv1.NetworkPolicyPeer{
		PodSelector: &metav1.LabelSelector{MatchLabels: opts.OperatorPodLabels},
	}
	if opts.OperatorNamespace != "" {
		operatorPeer.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{
			corev1.LabelMetadataName: opts.OperatorNamespace,
		}}
	}
	scrapers := opts.MetricsNamespaces
	if scrapers == nil {
		scrapers = &DefaultMetricsNamespaces
	}
	metricsPeer := networkingv1.NetworkPolicyPeer{NamespaceSelector: scrapers.DeepCopy()}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: clusterpods.ObjectLabels(c)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: clusterpods.SelectorLabels(c)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}}},
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &metrics}}, From: []networkingv1.NetworkPolicyPeer{metricsPeer}},
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &agent}}, From: []networkingv1.NetworkPolicyPeer{operatorPeer}},
			},
		},
	}
}
