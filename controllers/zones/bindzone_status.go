package zones

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
)

// problem is a reconcile outcome that goes to the Ready condition.
type problem struct {
	reason  string
	msg     string
	requeue time.Duration
}

func (p *problem) Error() string { return p.msg }

// report turns an error into the Ready condition.
func (r *BindZoneReconciler) report(zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus, err error) (ctrl.Result, error) {
	var p *problem
	if errors.As(err, &p) {
		setZoneCondition(zone, status, metav1.ConditionFalse, p.reason, p.msg)
		return ctrl.Result{RequeueAfter: p.requeue}, nil
	}
	setZoneCondition(zone, status, metav1.ConditionFalse, bindv1alpha1.ReasonAgentError, agent.Bound(err.Error()))
	return ctrl.Result{}, err
}

// observeSerials fills the primary's serial and each secondary's, and tells
// whether every secondary serves the primary's serial.
func (r *BindZoneReconciler) observeSerials(ctx context.Context, t *zoneTarget, status *bindv1alpha1.BindZoneStatus) bool {
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	primary, err := clusterpods.SOASerial(qctx, t.primary().DNSAddr, t.readKey, t.zoneName)
	if err != nil {
		status.Serial = nil
		return false
	}
	return observed(status, primary, clusterpods.ServedSerials(qctx, t.secondaries(), t.readKey, t.zoneName))
}

// observed records a look at a zone's pods in status: the primary serves
// serial primary, and each secondary what secs says (InSync is set here).
// It tells whether every secondary serves exactly the primary's serial.
func observed(status *bindv1alpha1.BindZoneStatus, primary uint32, secs []bindv1alpha1.SecondaryZoneStatus) bool {
	status.Serial = ptr.To(int64(primary))
	all := true
	for i := range secs {
		secs[i].InSync = secs[i].Serial != nil && *secs[i].Serial == int64(primary)
		all = all && secs[i].InSync
	}
	status.Secondaries = capSecondaries(secs)
	return all
}

// setServed reports a zone served by the primary, at the serial in
// status, and by every secondary.
func setServed(zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus) {
	setZoneCondition(zone, status, metav1.ConditionTrue, bindv1alpha1.ReasonServed,
		fmt.Sprintf("zone %s is served by the primary (serial %d) and every secondary.", zone.Spec.ZoneName, ptr.Deref(status.Serial, 0)))
}

// capSecondaries keeps the first 16 pods, the CRD's bound on
// status.secondaries.
func capSecondaries(secs []bindv1alpha1.SecondaryZoneStatus) []bindv1alpha1.SecondaryZoneStatus {
	if len(secs) > 16 {
		return secs[:16]
	}
	return secs
}

// setZoneCondition sets a zone's Ready condition. Its messages carry text
// from the agent and named, so they are bounded.
func setZoneCondition(zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus, s metav1.ConditionStatus, reason, msg string) {
	reconcileutil.SetCondition(&status.Conditions, zone, bindv1alpha1.ConditionReady, s, reason, agent.Bound(msg))
}
