package controllers

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
)

// ensureSOA keeps the served SOA what spec.soa says. The seed has it when
// the zone is created; a later edit (timers, mailbox, MNAME) reaches the
// primary as a signed UPDATE of the SOA with the serial one up, and from
// there every secondary. It reports whether it changed the SOA.
func (r *BindZoneReconciler) ensureSOA(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget) (bool, error) {
	want := render.ZoneSOA(t.zoneName, r.soaSpec(zone, t))
	cur, err := servedSOA(ctx, t.srv.Addr, t.zoneName)
	if err != nil {
		return false, err
	}
	if strings.EqualFold(cur.Ns, want.MName) && strings.EqualFold(cur.Mbox, want.RName) &&
		cur.Refresh == uint32(want.Refresh) && cur.Retry == uint32(want.Retry) && //nolint:gosec // the CRD bounds them to positive int32
		cur.Expire == uint32(want.Expire) && cur.Minttl == uint32(want.Minimum) { //nolint:gosec // as above
		return false, nil
	}
	next := *cur
	next.Ns, next.Mbox = want.MName, want.RName
	next.Refresh, next.Retry, next.Expire, next.Minttl = uint32(want.Refresh), uint32(want.Retry), uint32(want.Expire), uint32(want.Minimum) //nolint:gosec // as above
	next.Serial = cur.Serial + 1
	if err := setSOA(ctx, t.srv, t.zoneName, &next); err != nil {
		return false, err
	}
	r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "SOAUpdated", "Update", "SOA of %s set to %s %s %d %d %d %d (serial %d)",
		t.zoneName, next.Ns, next.Mbox, next.Refresh, next.Retry, next.Expire, next.Minttl, next.Serial)
	return true, nil
}
