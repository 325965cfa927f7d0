package zones

import (
	"context"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/render"
)

// ensureSOA keeps the served SOA what spec.soa says. The seed has it when
// the zone is created; a later edit (timers, mailbox, MNAME) reaches the
// primary as a signed UPDATE of the SOA with the serial one up, and from
// there every secondary. It reports whether it changed the SOA.
func (r *BindZoneReconciler) ensureSOA(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget) (bool, error) {
	want := render.ZoneSOA(t.zoneName, r.soaSpec(zone, t))
	//nolint:gosec // the CRD bounds the timers to positive int32
	refresh, retry, expire, minimum := uint32(want.Refresh), uint32(want.Retry), uint32(want.Expire), uint32(want.Minimum)
	next, err := clusterpods.EditSOA(ctx, t.srv, t.zoneName, func(soa *dns.SOA) bool {
		if strings.EqualFold(soa.Ns, want.MName) && strings.EqualFold(soa.Mbox, want.RName) &&
			soa.Refresh == refresh && soa.Retry == retry && soa.Expire == expire && soa.Minttl == minimum {
			return false
		}
		soa.Ns, soa.Mbox = want.MName, want.RName
		soa.Refresh, soa.Retry, soa.Expire, soa.Minttl = refresh, retry, expire, minimum
		soa.Serial++
		return true
	})
	if err != nil || next == nil {
		return false, err
	}
	r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "SOAUpdated", "Update", "SOA of %s set to %s %s %d %d %d %d (serial %d)",
		t.zoneName, next.Ns, next.Mbox, next.Refresh, next.Retry, next.Expire, next.Minttl, next.Serial)
	return true, nil
}
