package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/dnsclient"
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
	stuck := stuckSecondaries(primary, serialsByPod(zone.Status.Secondaries), status.Secondaries)
	notifyStuck(ctx, t.secondaries(), stuck, t.zoneName, *t.xfrKey)
}

// serialsByPod is the serial each secondary served, by pod; a pod that did
// not answer is absent.
func serialsByPod(secs []bindv1alpha1.SecondaryZoneStatus) map[string]int64 {
	out := make(map[string]int64, len(secs))
	for _, s := range secs {
		if s.Serial != nil {
			out[s.Pod] = *s.Serial
		}
	}
	return out
}

// notifyStuck sends a NOTIFY signed with key to each of secondaries named
// in stuck (stuckSecondaries). Best effort: the caller looks again.
func notifyStuck(ctx context.Context, secondaries []PodEndpoint, stuck map[string]bool, zone string, key dnsclient.Key) {
	var pods []PodEndpoint
	for _, p := range secondaries {
		if stuck[p.Pod] {
			pods = append(pods, p)
		}
	}
	if len(pods) > 0 {
		_ = notifySecondaries(ctx, pods, zone, key)
	}
}
