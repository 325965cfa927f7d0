package zones

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
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

// restoreKeys gives the primary's agent the zone's keys Secret (the
// operator's, or the importer's, which carries the operator's label)
// before the zone is ensured. The agent writes the files only while named does not
// serve the zone and has no key of it, so this is a no-op but on a new or
// emptied volume. A Secret whose files are not the zone's keys stops the
// zone from being added: named would make new keys.
func (r *BindZoneReconciler) restoreKeys(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget) error {
	if zone.Spec.DNSSECPolicyRef == nil {
		return nil
	}
	name := bindv1alpha1.DNSSECKeysSecretName(zone.Name)
	var secret corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: name}, &secret); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if secret.Labels[bindv1alpha1.LabelManagedBy] != bindv1alpha1.ManagedByValue {
		// Not the operator's (keepKeys says so on the zone): what it
		// holds is not taken for the zone's keys.
		return nil
	}
	keys, err := keysFromSecret(t.zoneName, secret.Data)
	if err != nil {
		return &problem{bindv1alpha1.ReasonDNSSECKeysUnusable, fmt.Sprintf("the DNSSEC keys in Secret %q are not usable for zone %s: %v; the zone is not added, since named would sign it with new keys that the parent's DS does not match. Fix the Secret, or delete it to let named make new keys and change the DS at the parent", name, t.zoneName, err), time.Minute}
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
		r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "DNSSECKeysRestored", "Restore", "restored the DNSSEC keys of zone %s (%d files) from Secret %q onto the primary %s, which had none", t.zoneName, len(keys.Files), name, prim.Pod)
	}
	return nil
}

// keepKeys copies the key files named signs the zone with into the zone's
// keys Secret when they differ from it (a new key, a rollover's state),
// and reports the DNSSECKeysStored condition. It returns how soon to look
// again when the copy is not done, 0 otherwise.
func (r *BindZoneReconciler) keepKeys(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, status *bindv1alpha1.BindZoneStatus) time.Duration {
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
	written, err := r.storeKeys(ctx, zone, name, keys)
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

// storeKeys makes the Secret hold exactly keys, owned by the zone. It
// writes only when something differs, and never a Secret of that name the
// operator did not create (the importer's carries the operator's label,
// as its own do).
func (r *BindZoneReconciler) storeKeys(ctx context.Context, zone *bindv1alpha1.BindZone, name string, keys agent.ZoneKeys) (bool, error) {
	want := secretData(keys)
	var cur corev1.Secret
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: name}, &cur)
	if apierrors.IsNotFound(err) {
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
	if err != nil {
		return false, err
	}
	if cur.Labels[bindv1alpha1.LabelManagedBy] != bindv1alpha1.ManagedByValue {
		return false, fmt.Errorf("the Secret %q exists and was not created by the operator, which does not write it; rename that Secret, or label it %s=%s to let the operator keep the zone's keys in it", name, bindv1alpha1.LabelManagedBy, bindv1alpha1.ManagedByValue)
	}
	owned := metav1.IsControlledBy(&cur, zone)
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

// secretData lays key files out as a Secret's data: one entry per file,
// "<algorithm>-<tag>.<kind>" ("013-12345.private"): a Secret key cannot
// hold named's '+'.
func secretData(keys agent.ZoneKeys) map[string][]byte {
	out := make(map[string][]byte, len(keys.Files))
	for _, f := range keys.Files {
		out[bindv1alpha1.DNSSECKeyFileKey(f.Algorithm, f.Tag, f.Kind)] = []byte(f.Data)
	}
	return out
}

// keysFromSecret reads a keys Secret's data back, checked as the agent
// checks it.
func keysFromSecret(zone string, data map[string][]byte) (agent.ZoneKeys, error) {
	keys := agent.ZoneKeys{Zone: zone}
	for _, k := range slices.Sorted(maps.Keys(data)) {
		alg, tag, kind, ok := bindv1alpha1.ParseDNSSECKeyFileKey(k)
		if !ok {
			return keys, fmt.Errorf("data key %q is not <algorithm>-<tag>.<key|private|state> (013-12345.private)", k)
		}
		keys.Files = append(keys.Files, agent.KeyFile{Algorithm: alg, Tag: tag, Kind: kind, Data: string(data[k])})
	}
	return validate.Keys(keys)
}
