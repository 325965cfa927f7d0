package zones

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
)

// A hidden primary's zone is served to the world by secondaries outside
// the cluster (spec.externalSecondaries). named notifies them and lets
// them transfer (render); whether they did is only seen by asking them.
// The primary pod's agent asks (a transfer probe that stops at the SOA),
// from the address the NOTIFYs leave from and signed with the key named
// has for each: the operator itself never sends to an address a zone
// names, so a zone cannot make it reach what only it can reach.

// externalRecheck is how soon a zone looks again at external secondaries
// that do not serve it: they are someone else's servers, fixed at their
// pace.
const externalRecheck = 30 * time.Second

// observeExternal records, in status.externalSecondaries, what each
// external secondary serves against the primary's serial (status.serial,
// which must be set), and returns the messages of those that do not serve
// the zone at all, and of those that serve an older serial.
func (r *BindZoneReconciler) observeExternal(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, status *bindv1alpha1.BindZoneStatus) (failing, behind []string) {
	servers := zone.Spec.ExternalSecondaries
	if len(servers) == 0 || status.Serial == nil {
		status.ExternalSecondaries = nil
		return nil, nil
	}
	req := agent.TransferProbeRequest{Zone: t.zoneName, SOAOnly: true}
	for _, s := range servers {
		addr, port := s.AddressPort()
		p := agent.ProbePrimary{Address: addr, Port: int(port)}
		if s.KeyRef != nil {
			// The key named has for it: the zone's clause named it, so
			// the render input holds its material.
			k, ok := t.in.Keys[s.KeyRef.Name]
			if !ok {
				return externalUnasked(status, servers, fmt.Sprintf("its key, BindTSIGKey %q, is not among the cluster's keys yet", s.KeyRef.Name))
			}
			p.Key = k.Name
		}
		req.Primaries = append(req.Primaries, p)
	}
	prim := t.primary()
	ac, err := r.agents.Get(ctx, t.cluster, prim.AgentAddr)
	if err != nil {
		return externalUnasked(status, servers, fmt.Sprintf("the agent of the primary %s, which asks it, cannot be reached: %s", prim.Pod, agent.BoundTo(err.Error(), 256)))
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	res, err := ac.ProbeTransfer(pctx, req)
	if err != nil {
		return externalUnasked(status, servers, fmt.Sprintf("the agent of the primary %s, which asks it, failed: %s", prim.Pod, agent.BoundTo(err.Error(), 256)))
	}
	status.ExternalSecondaries, failing, behind = externalStatus(servers, res.Outcomes, uint32(*status.Serial), t.zoneName) //nolint:gosec // serials are uint32 on the wire
	return failing, behind
}

// externalUnasked records that no external secondary could be asked, and
// why, as each one's message. What the operator's side could not do (read
// a key, reach the primary's agent, or an agent of an earlier release that
// refuses the request) says nothing about the secondaries, so it does not
// make the zone fail: it reports none.
func externalUnasked(status *bindv1alpha1.BindZoneStatus, servers []bindv1alpha1.RemoteServer, why string) (failing, behind []string) {
	status.ExternalSecondaries = make([]bindv1alpha1.ExternalSecondaryStatus, len(servers))
	for i, s := range servers {
		status.ExternalSecondaries[i] = bindv1alpha1.ExternalSecondaryStatus{Server: externalServer(s), Message: "not asked: " + why}
	}
	return nil, nil
}

// externalServer is how status names a server: address and port.
func externalServer(s bindv1alpha1.RemoteServer) string {
	addr, port := s.AddressPort()
	return net.JoinHostPort(addr, strconv.Itoa(int(port)))
}

// externalStatus turns the probe's outcomes (one per server, in order;
// missing ones count as unanswered) into status entries against the
// primary's serial, with the messages of the servers that do not serve
// the zone and of those behind.
func externalStatus(servers []bindv1alpha1.RemoteServer, outcomes []agent.ProbeOutcome, primary uint32, zoneName string) (out []bindv1alpha1.ExternalSecondaryStatus, failing, behind []string) {
	out = make([]bindv1alpha1.ExternalSecondaryStatus, len(servers))
	for i, s := range servers {
		st := &out[i]
		st.Server = externalServer(s)
		var o agent.ProbeOutcome
		if i < len(outcomes) {
			o = outcomes[i]
		}
		switch {
		case i >= len(outcomes) || o.Error != "":
			why := "no answer"
			if o.Error != "" {
				why = agent.BoundTo(o.Error, 512)
			}
			st.Message = fmt.Sprintf("asked for the SOA of %s: %s; it does not serve the zone (if it runs, its own log says why its transfer failed)", zoneName, why)
			failing = append(failing, st.Server+" "+st.Message)
		case o.Serial != primary && !clusterpods.SerialNewer(o.Serial, primary):
			st.Serial = ptr.To(int64(o.Serial))
			st.Message = fmt.Sprintf("serves serial %d, the primary %d", o.Serial, primary)
			behind = append(behind, st.Server+" "+st.Message)
		default:
			// The primary's serial or newer: status.serial was read
			// before an UPDATE the secondary already has.
			st.Serial = ptr.To(int64(o.Serial))
			st.InSync = true
		}
	}
	return out, failing, behind
}

// externalSummary joins the messages of external secondaries for a
// condition.
func externalSummary(msgs []string) string { return strings.Join(msgs, "; ") }
