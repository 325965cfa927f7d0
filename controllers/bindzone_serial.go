package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// catchUpSerial raises the primary's serial past the secondaries' when one
// serves a newer serial than the primary (see serials.go). It reports
// whether it did.
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
	past, ahead := newestSerial(uint32(*status.Serial), secs) //nolint:gosec // as above
	if !ahead {
		return false, nil
	}
	old, err := raiseSerial(ctx, t.srv, t.zoneName, past)
	if err != nil {
		return false, err
	}
	r.Recorder.Eventf(zone, nil, corev1.EventTypeWarning, "SerialBehind", "Update",
		"the primary served serial %d while a secondary served %d (the primary lost its data?); raised the primary's serial to %d so every secondary transfers the zone again", old, past, past+1)
	return true, nil
}

// renotify sends a NOTIFY, signed with the transfer key, to each secondary
// that serves an older serial than the primary and has not moved since the
// previous look (the zone's status, written at least one requeue ago): it
// missed the primary's NOTIFY (it was starting, or the datagram was lost)
// and would otherwise wait for the SOA refresh. Best effort.
func (r *BindZoneReconciler) renotify(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, status *bindv1alpha1.BindZoneStatus) {
	if status.Serial == nil || t.xfrKey == nil {
		return
	}
	primary := uint32(*status.Serial) //nolint:gosec // serials are uint32 on the wire
	before := map[string]int64{}
	for _, s := range zone.Status.Secondaries {
		if s.Serial != nil {
			before[s.Pod] = *s.Serial
		}
	}
	stuck := stuckSecondaries(primary, before, status.Secondaries)
	var pods []PodEndpoint
	for _, p := range t.secondaries() {
		if stuck[p.Pod] {
			pods = append(pods, p)
		}
	}
	if len(pods) > 0 {
		_ = notifySecondaries(ctx, pods, t.zoneName, *t.xfrKey)
	}
}
