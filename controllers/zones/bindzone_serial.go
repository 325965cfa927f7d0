package zones

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
)

// catchUpSerial raises the primary's serial past the secondaries' when one
// serves a newer serial than the primary (see clusterpods/serials.go). It reports
// whether the serials are worth reading again: it raised the primary's,
// or found that the primary had moved on since the look.
func (r *BindZoneReconciler) catchUpSerial(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, status *bindv1alpha1.BindZoneStatus) (bool, error) {
	if status.Serial == nil {
		return false, nil
	}
	var secs []uint32
	for _, s := range status.Secondaries {
		if s.Serial != nil {
			secs = append(secs, uint32(*s.Serial)) //nolint:gosec // serials are uint32 on the wire
		}
	}
	past, ahead := clusterpods.NewestSerial(uint32(*status.Serial), secs) //nolint:gosec // as above
	if !ahead {
		return false, nil
	}
	old, raised, err := clusterpods.RaiseSerial(ctx, t.srv, t.zoneName, past)
	if err != nil {
		return false, err
	}
	if !raised {
		return true, nil // the primary had moved on: the look is stale
	}
	r.Recorder.Eventf(zone, nil, corev1.EventTypeWarning, "SerialBehind", "Update",
		"the primary served serial %d while a secondary served %d (the primary lost its data?); raised the primary's serial to %d so every secondary transfers the zone again", old, past, past+1)
	return true, nil
}

// renotify sends a NOTIFY, signed with the transfer key, to each secondary
// that missed one (stuckSecondaries) between the previous look (the zone's
// status, written at least one requeue ago) and this one: it was starting,
// or the datagram was lost, and would otherwise wait for the SOA refresh.
// Best effort.
func (r *BindZoneReconciler) renotify(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, status *bindv1alpha1.BindZoneStatus) {
	if status.Serial == nil || zone.Status.Serial == nil || t.xfrKey == nil {
		return
	}
	before := lookOf(uint32(*zone.Status.Serial), zone.Status.Secondaries) //nolint:gosec // serials are uint32 on the wire
	now := lookOf(uint32(*status.Serial), status.Secondaries)              //nolint:gosec // as above
	notifyStuck(ctx, t.secondaries(), stuckSecondaries(before, now), t.zoneName, *t.xfrKey)
}

// notifyStuck sends a NOTIFY signed with key to each of secondaries named
// in stuck (stuckSecondaries). Best effort: the caller looks again.
func notifyStuck(ctx context.Context, secondaries []clusterpods.PodEndpoint, stuck map[string]bool, zone string, key dnsclient.Key) {
	var pods []clusterpods.PodEndpoint
	for _, p := range secondaries {
		if stuck[p.Pod] {
			pods = append(pods, p)
		}
	}
	if len(pods) > 0 {
		_ = clusterpods.NotifySecondaries(ctx, pods, zone, key)
	}
}
