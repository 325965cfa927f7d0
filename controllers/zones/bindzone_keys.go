package zones

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
)

// A signed zone's keys are its identity to validating resolvers: the
// parent publishes a DS for its key-signing key. named keeps them on the
// primary's volume only, so a lost volume, or a cluster built anew, would
// sign with new keys and every validator would answer SERVFAIL until the
// parent's DS changed. The operator keeps a copy of the key files in a
// Secret owned by the BindZone (keepKeys) and puts it back before the zone
// is added to a primary that has none (restoreKeys). The Secret is also how
// an import brings an existing server's keys (bind-operator import).

// keysRequeue is how soon a signed zone whose keys named has not made yet,
// or whose copy failed, is looked at again.
const keysRequeue = 5 * time.Second

// keysSecret reads the zone's keys Secret once per reconcile, for
// restoreKeys and keepKeys: nil for an unsigned zone or when it does not
// exist.
func (r *BindZoneReconciler) keysSecret(ctx context.Context, zone *bindv1alpha1.BindZone) (*corev1.Secret, error) {
	if zone.Spec.DNSSECPolicyRef == nil {
		return nil, nil
	}
	var secret corev1.Secret
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: bindv1alpha1.DNSSECKeysSecretName(zone.Name)}, &secret)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &secret, nil
}

// ours: the operator's Secret, or the importer's, which carries the
// operator's label. No other is read for keys or written.
func ours(s *corev1.Secret) bool {
	return s.Labels[bindv1alpha1.LabelManagedBy] == bindv1alpha1.ManagedByValue
}

// restoreKeys gives the primary's agent the zone's keys Secret before the
// zone is ensured. The agent writes the files only while named does not
// serve the zone and has no key of it, so this is a no-op but on a new or
// emptied volume. A Secret whose files are not the zone's keys stops the
// zone from being added: named would make new keys.
func (r *BindZoneReconciler) restoreKeys(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, secret *corev1.Secret) error {
	if secret == nil || !ours(secret) {
		// A Secret not the operator's is reported by keepKeys.
		return nil
	}
	keys, err := validate.FromSecretData(t.zoneName, secret.Data)
	if err != nil {
		return &problem{bindv1alpha1.ReasonDNSSECKeysUnusable, fmt.Sprintf("the DNSSEC keys in Secret %q are not usable for zone %s: %v; the zone is not added, since named would sign it with new keys that the parent's DS does not match. Fix the Secret, or delete it to let named make new keys and change the DS at the parent", secret.Name, t.zoneName, err), time.Minute}
	}
	if len(keys.Files) == 0 {
		return nil
	}
	prim := t.primary()
	ac, err := r.agents.Get(ctx, t.cluster, prim.AgentAddr)
	if err != nil {
		return &problem{bindv1alpha1.ReasonPrimaryNotReady, err.Error(), 10 * time.Second}
	}
	res, err := ac.RestoreZoneKeys(ctx, keys)
	if agent.IsNotFound(err) {
		// An agent of an earlier release, until the pods roll to this
		// one's: it cannot restore, and the zone is ensured as before.
		return nil
	}
	if err != nil {
		return agentProblem(prim.Pod, err)
	}
	if res.Restored {
		r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "DNSSECKeysRestored", "Restore", "restored the DNSSEC keys of zone %s (%d files) from Secret %q onto the primary %s, which had none", t.zoneName, len(keys.Files), secret.Name, prim.Pod)
	}
	return nil
}

// keepKeys copies the key files named signs the zone with into the zone's
// keys Secret when they differ from it (a new key, a rollover's state),
// and reports the DNSSECKeysStored condition. It returns how soon to look
// again when the copy is not done, 0 otherwise.
func (r *BindZoneReconciler) keepKeys(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, status *bindv1alpha1.BindZoneStatus, secret *corev1.Secret) time.Duration {
	if zone.Spec.DNSSECPolicyRef == nil {
		meta.RemoveStatusCondition(&status.Conditions, bindv1alpha1.ConditionDNSSECKeysStored)
		return 0
	}
	set := func(s metav1.ConditionStatus, reason, msg string) {
		reconcileutil.SetCondition(&status.Conditions, zone, bindv1alpha1.ConditionDNSSECKeysStored, s, reason, agent.Bound(msg))
	}
	prim := t.primary()
	name := bindv1alpha1.DNSSECKeysSecretName(zone.Name)
	ac, err := r.agents.Get(ctx, t.cluster, prim.AgentAddr)
	if err != nil {
		set(metav1.ConditionFalse, bindv1alpha1.ReasonKeysNotStored, err.Error())
		return keysRequeue
	}
	keys, err := ac.ZoneKeys(ctx, t.zoneName, validate.Replies)
	if agent.IsNotFound(err) {
		set(metav1.ConditionFalse, bindv1alpha1.ReasonKeysNotStored, fmt.Sprintf("the agent of the primary %s predates key copies; the keys are copied once the pods run this release's agent", prim.Pod))
		return time.Minute
	}
	if err != nil {
		set(metav1.ConditionFalse, bindv1alpha1.ReasonKeysNotStored, fmt.Sprintf("reading the zone's keys from the primary %s: %v", prim.Pod, err))
		return keysRequeue
	}
	if len(keys.Files) == 0 {
		set(metav1.ConditionFalse, bindv1alpha1.ReasonNoKeysYet, fmt.Sprintf("named on the primary %s has not made the keys of zone %s yet", prim.Pod, t.zoneName))
		return keysRequeue
	}
	written, err := r.storeKeys(ctx, zone, name, keys, secret)
	if err != nil {
		set(metav1.ConditionFalse, bindv1alpha1.ReasonKeysNotStored, err.Error())
		return keysRequeue
	}
	if written {
		r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "DNSSECKeysStored", "Store", "copied the DNSSEC keys of zone %s (%d files) into Secret %q", t.zoneName, len(keys.Files), name)
	}
	if status.DNSSEC == nil {
		status.DNSSEC = &bindv1alpha1.ZoneDNSSECStatus{}
	}
	status.DNSSEC.KeysSecret = name
	set(metav1.ConditionTrue, bindv1alpha1.ReasonKeysStored, fmt.Sprintf("Secret %q holds the %d key files named signs zone %s with; they are restored onto a primary volume that loses them", name, len(keys.Files), t.zoneName))
	return 0
}

// storeKeys makes the Secret hold exactly keys, owned by the zone; cur is
// the Secret as keysSecret read it (nil: none). It writes only when
// something differs, and never a Secret of that name the operator did not
// create.
func (r *BindZoneReconciler) storeKeys(ctx context.Context, zone *bindv1alpha1.BindZone, name string, keys agent.ZoneKeys, cur *corev1.Secret) (bool, error) {
	want := validate.SecretData(keys)
	if cur == nil {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: zone.Namespace, Labels: keysLabels(zone, nil)},
			Type:       corev1.SecretTypeOpaque,
			Data:       want,
		}
		if err := controllerutil.SetControllerReference(zone, s, r.Client.Scheme()); err != nil {
			return false, err
		}
		if err := r.Client.Create(ctx, s); err != nil {
			return false, fmt.Errorf("creating Secret %q: %w", name, err)
		}
		return true, nil
	}
	if !ours(cur) {
		return false, fmt.Errorf("the Secret %q exists and was not created by the operator, which does not write it; rename that Secret, or label it %s=%s to let the operator keep the zone's keys in it", name, bindv1alpha1.LabelManagedBy, bindv1alpha1.ManagedByValue)
	}
	owned := metav1.IsControlledBy(cur, zone)
	if owned && maps.EqualFunc(cur.Data, want, bytes.Equal) {
		return false, nil
	}
	upd := cur.DeepCopy()
	upd.Data = want
	upd.Labels = keysLabels(zone, cur.Labels)
	if !owned {
		if err := controllerutil.SetControllerReference(zone, upd, r.Client.Scheme()); err != nil {
			return false, fmt.Errorf("the Secret %q: %w", name, err)
		}
	}
	if err := r.Client.Update(ctx, upd); err != nil {
		return false, fmt.Errorf("updating Secret %q: %w", name, err)
	}
	return true, nil
}

// keysLabels are the keys Secret's labels: the operator's, so the manager
// caches it, and the zone's cluster, beside whatever others set.
func keysLabels(zone *bindv1alpha1.BindZone, cur map[string]string) map[string]string {
	out := maps.Clone(cur)
	if out == nil {
		out = map[string]string{}
	}
	out[bindv1alpha1.LabelManagedBy] = bindv1alpha1.ManagedByValue
	out[bindv1alpha1.LabelCluster] = zone.Spec.ClusterRef.Name
	return out
}
