package webhooks

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// podNetworkSource finds what counts as a pod IP: the configured pod CIDRs
// (or, when none are configured and derivation is on, the Nodes'
// spec.podCIDRs) and the current IPs of every BindCluster pod in any
// namespace. The IPs matter even when the CIDRs are known: CNIs that hand
// out addresses outside the node ranges exist.
type podNetworkSource struct {
	r              client.Reader
	cidrs          []netip.Prefix
	deriveFromNode bool
}

func (s podNetworkSource) get(ctx context.Context, w *admission.Warnings) PodNetwork {
	n := PodNetwork{CIDRs: append([]netip.Prefix(nil), s.cidrs...)}
	if s.r == nil {
		return n
	}
	if len(n.CIDRs) == 0 && s.deriveFromNode {
		var nodes corev1.NodeList
		if err := s.r.List(ctx, &nodes); err != nil {
			*w = append(*w, fmt.Sprintf("could not list Nodes to learn the pod CIDRs (%v); only current BIND pod IPs were checked", err))
		} else {
			for _, node := range nodes.Items {
				cs := node.Spec.PodCIDRs
				if len(cs) == 0 && node.Spec.PodCIDR != "" {
					cs = []string{node.Spec.PodCIDR}
				}
				for _, c := range cs {
					if p, err := netip.ParsePrefix(c); err == nil {
						n.CIDRs = append(n.CIDRs, p.Masked())
					}
				}
			}
		}
	}
	var pods corev1.PodList
	if err := s.r.List(ctx, &pods, client.HasLabels{v1alpha1.LabelCluster}); err != nil {
		*w = append(*w, fmt.Sprintf("could not list BIND pods to learn their IPs (%v); only the pod CIDRs were checked", err))
		return n
	}
	for _, p := range pods.Items {
		ips := p.Status.PodIPs
		if len(ips) == 0 && p.Status.PodIP != "" {
			ips = []corev1.PodIP{{IP: p.Status.PodIP}}
		}
		for _, ip := range ips {
			if a, err := netip.ParseAddr(ip.IP); err == nil {
				n.IPs = append(n.IPs, a)
			}
		}
	}
	return n
}
