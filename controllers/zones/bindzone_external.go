package zones

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
)

// A hidden primary's zone is served to the world by secondaries outside
// the cluster (spec.externalSecondaries). named notifies them and lets
// them transfer (render); whether they did is only seen by asking them,
// so each look asks every one for the zone's SOA, signed with its key
// when it has one, and records what it serves or why not.

// externalTimeout bounds one external secondary's answer; they are asked
// at once, so a look costs this at most.
const externalTimeout = 3 * time.Second

// externalRecheck is how soon a zone looks again at external secondaries
// that do not serve it: they are someone else's servers, fixed at their
// pace.
const externalRecheck = 30 * time.Second

// observeExternal records, in status.externalSecondaries, what each
// external secondary serves against the primary's serial (status.serial,
// which must be set), and returns the messages of those that do not serve
// the zone at all, and of those that serve an older serial.
func (r *BindZoneReconciler) observeExternal(ctx context.Context, zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus, zoneName string) (failing, behind []string) {
	servers := zone.Spec.ExternalSecondaries
	if len(servers) == 0 || status.Serial == nil {
		status.ExternalSecondaries = nil
		return nil, nil
	}
	primary := *status.Serial
	out := make([]bindv1alpha1.ExternalSecondaryStatus, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		port := 53
		if s.Port != nil {
			port = int(*s.Port)
		}
		out[i].Server = net.JoinHostPort(s.Address, strconv.Itoa(port))
		var key *dnsclient.Key
		if s.KeyRef != nil {
			k, err := clusterpods.LoadUpdateKey(ctx, r.Client, zone.Namespace, s.KeyRef.Name)
			if err != nil {
				out[i].Message = fmt.Sprintf("its key (BindTSIGKey %q) cannot be read: %s", s.KeyRef.Name, agent.BoundTo(err.Error(), 512))
				continue
			}
			key = &k
		}
		wg.Add(1)
		go func(st *bindv1alpha1.ExternalSecondaryStatus) {
			defer wg.Done()
			qctx, cancel := context.WithTimeout(ctx, externalTimeout)
			defer cancel()
			serial, err := clusterpods.SOASerial(qctx, st.Server, key, zoneName)
			if err != nil {
				st.Message = fmt.Sprintf("asked for the SOA of %s: %s; it does not serve the zone (if it runs, its own log says why its transfer failed)", zoneName, agent.BoundTo(err.Error(), 512))
				return
			}
			st.Serial = ptr.To(int64(serial))
			st.InSync = int64(serial) == primary
			if !st.InSync {
				st.Message = fmt.Sprintf("serves serial %d, the primary %d", serial, primary)
			}
		}(&out[i])
	}
	wg.Wait()
	for _, st := range out {
		switch {
		case st.Serial == nil:
			failing = append(failing, st.Server+" "+st.Message)
		case !st.InSync:
			behind = append(behind, st.Server+" "+st.Message)
		}
	}
	status.ExternalSecondaries = out
	return failing, behind
}

// externalSummary joins the messages of external secondaries for a
// condition.
func externalSummary(msgs []string) string { return strings.Join(msgs, "; ") }
