package zones

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/records"
)

// secondaryRecheck is how often a Secondary zone that some pod does not
// serve yet is looked at again.
const secondaryRecheck = 10 * time.Second

// observeSecondary reports a Secondary zone (declared in named.conf; every
// pod transfers it from spec.primaries): Ready only once every pod serves
// it, with each pod's serial in status.secondaries and the newest in
// status.serial. The queries of a zone in a view are signed with the view's
// key, which selects the view.
func (r *BindZoneReconciler) observeSecondary(ctx context.Context, zone *bindv1alpha1.BindZone, status *bindv1alpha1.BindZoneStatus) ctrl.Result {
	var cluster bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: zone.Spec.ClusterRef.Name}, &cluster); err != nil {
		msg := fmt.Sprintf("BindCluster %q does not exist; create it or fix spec.clusterRef.", zone.Spec.ClusterRef.Name)
		if !apierrors.IsNotFound(err) {
			msg = fmt.Sprintf("reading BindCluster %q: %v", zone.Spec.ClusterRef.Name, err)
		}
		setZoneCondition(zone, status, metav1.ConditionFalse, bindv1alpha1.ReasonClusterNotFound, msg)
		return ctrl.Result{RequeueAfter: secondaryRecheck}
	}
	pods, err := r.Endpoints.Pods(ctx, &cluster)
	if err != nil || len(pods) == 0 {
		setZoneCondition(zone, status, metav1.ConditionFalse, bindv1alpha1.ReasonNotTransferred,
			fmt.Sprintf("BindCluster %q has no pods with an address yet.", cluster.Name))
		return ctrl.Result{RequeueAfter: secondaryRecheck}
	}
	var key *dnsclient.Key
	if ref := zone.Spec.ViewRef; ref != nil {
		k, err := clusterpods.ViewKey(ctx, r.Client, &cluster, ref.Name)
		if err != nil {
			setZoneCondition(zone, status, metav1.ConditionFalse, bindv1alpha1.ReasonNotTransferred, err.Error())
			return ctrl.Result{RequeueAfter: secondaryRecheck}
		}
		key = &k
	}
	name := records.CanonicalZone(string(zone.Spec.ZoneName))
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	secs := clusterpods.ServedSerials(qctx, pods, key, name)
	var missing []string
	var newest *uint32
	for _, st := range secs {
		if st.Serial == nil {
			missing = append(missing, st.Pod)
		} else if serial := uint32(*st.Serial); newest == nil || clusterpods.SerialNewer(serial, *newest) { //nolint:gosec // serials are uint32 on the wire
			newest = ptr.To(serial)
		}
	}
	for i := range secs {
		secs[i].InSync = secs[i].Serial != nil && uint32(*secs[i].Serial) == *newest //nolint:gosec // as above
	}
	status.Secondaries = capSecondaries(secs)
	status.Serial = nil
	if newest != nil {
		status.Serial = ptr.To(int64(*newest))
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		msg := fmt.Sprintf("%d of %d pods (%s) do not serve zone %s: their transfer from spec.primaries has not succeeded yet; check the primaries' addresses and ports, that they allow this cluster to transfer the zone, and the key.", len(missing), len(pods), strings.Join(missing, ", "), name)
		for _, p := range pods {
			if p.Pod == missing[0] {
				if why := r.transferReason(ctx, &cluster, p, zone, name); why != "" {
					msg += " " + why
				}
			}
		}
		setZoneCondition(zone, status, metav1.ConditionFalse, bindv1alpha1.ReasonNotTransferred, msg)
		return ctrl.Result{RequeueAfter: secondaryRecheck}
	}
	setZoneCondition(zone, status, metav1.ConditionTrue, bindv1alpha1.ReasonTransferred,
		fmt.Sprintf("every pod serves zone %s, transferred from spec.primaries (newest serial %d).", name, *newest))
	return ctrl.Result{RequeueAfter: r.resyncPeriod()}
}
