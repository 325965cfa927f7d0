package zones

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
)

// probeTimeout bounds asking a pod's agent to try a Secondary zone's
// transfer (the agent bounds each primary to 5 s, in parallel).
const probeTimeout = 10 * time.Second

// transferReason asks the agent of pod to try the transfer named makes of
// a Secondary zone from its primaries, from the pod's own address and with
// the zone's keys, and says what each primary answered. named only logs
// why a transfer failed; this puts the reason in the zone's status. "" when
// the agent cannot be asked (the caller's message stands alone then).
func (r *BindZoneReconciler) transferReason(ctx context.Context, cluster *bindv1alpha1.BindCluster, pod clusterpods.PodEndpoint, zone *bindv1alpha1.BindZone, name string) string {
	req := agent.TransferProbeRequest{Zone: name}
	for _, p := range zone.Spec.Primaries {
		pp := agent.ProbePrimary{Address: p.Address, Port: 53}
		if p.Port != nil {
			pp.Port = int(*p.Port)
		}
		if p.KeyRef != nil {
			var k bindv1alpha1.BindTSIGKey
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: p.KeyRef.Name}, &k); err != nil {
				return ""
			}
			_, pp.Key, _ = clusterpods.TSIGDefaults(&k)
		}
		req.Primaries = append(req.Primaries, pp)
	}
	ac, err := r.agents.Get(ctx, cluster, pod.AgentAddr)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	res, err := ac.ProbeTransfer(ctx, req)
	if err != nil {
		return ""
	}
	var parts []string
	for _, o := range res.Outcomes {
		if o.Error != "" {
			parts = append(parts, fmt.Sprintf("%s: %s", o.Server, o.Error))
		} else {
			parts = append(parts, fmt.Sprintf("%s offers the transfer (serial %d)", o.Server, o.Serial))
		}
	}
	return fmt.Sprintf("A transfer tried from %s: %s.", pod.Pod, strings.Join(parts, "; "))
}
