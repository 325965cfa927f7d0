package tsigkeys

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
)

// annotationTemplateKeys remembers which labels and annotations of a
// generated Secret came from secretTemplate, so keys removed from the
// template are removed from the Secret and nobody else's are touched.
const annotationTemplateKeys = "bind.unkin.net/secret-template-keys"

// BindTSIGKeyReconciler generates a TSIG key's material into a Secret once,
// keeps the Secret's template metadata in line, and adopts imported Secrets
// without ever modifying them.
type BindTSIGKeyReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Rechecks runs the current admission rules over the key
	// (docs/behaviours.md, "Stored objects are re-checked"); nil
	// re-checks nothing.
	Rechecks *reconcileutil.Rechecks
	// SecretResyncPeriod is how often a key whose Secret the operator did
	// not generate (imported, missing for import, or in a conflict) reads
	// it again: such Secrets are not cached, so no watch reports them.
	// Zero means DefaultSecretResyncPeriod.
	SecretResyncPeriod time.Duration
}

// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindtsigkeys,verbs=get;list;watch
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindtsigkeys/status,verbs=patch
// The generated Secret's owner reference blocks the key's deletion
// (blockOwnerDeletion), which needs update on the key's finalizers.
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindtsigkeys/finalizers,verbs=update
// Generated Secrets are created once and their template metadata updated;
// garbage collection deletes them with their key.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update

// Reconcile makes sure one BindTSIGKey has usable material.
func (r *BindTSIGKeyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var key bindv1alpha1.BindTSIGKey
	if err := r.Client.Get(ctx, req.NamespacedName, &key); err != nil {
		return ctrl.Result{}, r.Rechecks.Gone(&key, req.NamespacedName, err)
	}
	if key.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if msg := r.Rechecks.Check(&key); msg != "" {
		return ctrl.Result{}, r.invalidKey(ctx, &key, msg)
	}
	secretName, keyName, alg := clusterpods.TSIGDefaults(&key)
	status := key.Status.DeepCopy()
	status.ObservedGeneration = key.Generation
	status.SecretName = secretName
	status.KeyName = keyName

	cond, err := r.reconcileSecret(ctx, &key, secretName, keyName, alg)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Warn once per change of state, not on every resync.
	if prev := meta.FindStatusCondition(status.Conditions, cond.Type); cond.Status != metav1.ConditionTrue &&
		(prev == nil || prev.Reason != cond.Reason || prev.Status != cond.Status) {
		r.Recorder.Eventf(&key, nil, corev1.EventTypeWarning, cond.Reason, "Reconcile", "%s", cond.Message)
	}
	reconcileutil.SetCondition(&status.Conditions, &key, cond.Type, cond.Status, cond.Reason, cond.Message)
	var result ctrl.Result
	if key.Spec.ImportExisting || cond.Reason == bindv1alpha1.ReasonSecretConflict {
		result.RequeueAfter = r.SecretResyncPeriod
		if result.RequeueAfter <= 0 {
			result.RequeueAfter = reconcileutil.DefaultSecretResyncPeriod
		}
	}
	return result, reconcileutil.PatchStatus(ctx, r.Client, &key, func(k *bindv1alpha1.BindTSIGKey) { k.Status = *status })
}

func (r *BindTSIGKeyReconciler) reconcileSecret(ctx context.Context, key *bindv1alpha1.BindTSIGKey, secretName, keyName string, alg bindv1alpha1.TSIGAlgorithm) (metav1.Condition, error) {
	var secret corev1.Secret
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: secretName}, &secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return metav1.Condition{}, err
	}
	exists := err == nil

	if key.Spec.ImportExisting {
		if !exists {
			return notReady(bindv1alpha1.ReasonSecretMissing, fmt.Sprintf("the Secret %q to import does not exist; create it with the base64 key under %q", secretName, bindv1alpha1.TSIGSecretKey)), nil
		}
		if err := clusterpods.CheckTSIGSecret(secret.Data[bindv1alpha1.TSIGSecretKey]); err != nil {
			return notReady(bindv1alpha1.ReasonSecretUnusable, fmt.Sprintf("the imported Secret %q is unusable: %v", secretName, err)), nil
		}
		return ready(bindv1alpha1.ReasonKeyImported, fmt.Sprintf("using the imported Secret %q (never modified by the operator)", secretName)), nil
	}

	if !exists {
		material, err := clusterpods.GenerateTSIGSecret(alg)
		if err != nil {
			return metav1.Condition{}, err
		}
		secret = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: key.Namespace},
			Type:       corev1.SecretTypeOpaque,
			Data: map[string][]byte{
				bindv1alpha1.TSIGSecretKey:       []byte(material),
				bindv1alpha1.TSIGSecretAlgorithm: []byte(alg),
				bindv1alpha1.TSIGSecretKeyName:   []byte(keyName),
			},
		}
		applyTemplate(&secret, key.Spec.SecretTemplate)
		if err := controllerutil.SetControllerReference(key, &secret, r.Client.Scheme()); err != nil {
			return metav1.Condition{}, err
		}
		if err := r.Client.Create(ctx, &secret); err != nil {
			return metav1.Condition{}, err
		}
		r.Recorder.Eventf(key, nil, corev1.EventTypeNormal, bindv1alpha1.ReasonKeyGenerated, "Generate", "generated %s key material into Secret %q", alg, secretName)
		return ready(bindv1alpha1.ReasonKeyGenerated, fmt.Sprintf("key material is in Secret %q", secretName)), nil
	}

	if clusterpods.KeySecretUsable(key, &secret) != nil {
		return notReady(bindv1alpha1.ReasonSecretConflict, fmt.Sprintf("the Secret %q exists but was not created for this BindTSIGKey; set importExisting: true to adopt it, or choose another secretName", secretName)), nil
	}
	// Material is generated once: an existing Secret keeps its key, only
	// its template metadata is reconciled, and only when it differs.
	updated := secret.DeepCopy()
	applyTemplate(updated, key.Spec.SecretTemplate)
	if !equality.Semantic.DeepEqual(updated.ObjectMeta, secret.ObjectMeta) {
		if err := r.Client.Update(ctx, updated); err != nil {
			return metav1.Condition{}, err
		}
	}
	if err := clusterpods.CheckTSIGSecret(secret.Data[bindv1alpha1.TSIGSecretKey]); err != nil {
		return notReady(bindv1alpha1.ReasonSecretUnusable, fmt.Sprintf("the Secret %q is unusable: %v; delete the Secret to generate a new key", secretName, err)), nil
	}
	return ready(bindv1alpha1.ReasonKeyGenerated, fmt.Sprintf("key material is in Secret %q", secretName)), nil
}

// applyTemplate sets the template's labels and annotations, removes those a
// previous template set and this one no longer has, and always keeps the
// operator's managed-by label.
func applyTemplate(s *corev1.Secret, tpl *bindv1alpha1.SecretTemplate) {
	var labels, annotations map[string]string
	if tpl != nil {
		labels, annotations = tpl.Labels, tpl.Annotations
	}
	prevLabels, prevAnnotations := parseTemplateKeys(s.Annotations[annotationTemplateKeys])
	s.Labels = mergeOwned(s.Labels, labels, prevLabels)
	s.Annotations = mergeOwned(s.Annotations, annotations, prevAnnotations)
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[bindv1alpha1.LabelManagedBy] = bindv1alpha1.ManagedByValue
	if keys := formatTemplateKeys(labels, annotations); keys != "" {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[annotationTemplateKeys] = keys
	} else {
		delete(s.Annotations, annotationTemplateKeys)
	}
	if len(s.Annotations) == 0 {
		s.Annotations = nil
	}
}

func mergeOwned(current, want map[string]string, previous []string) map[string]string {
	out := map[string]string{}
	for k, v := range current {
		out[k] = v
	}
	for _, k := range previous {
		if _, still := want[k]; !still {
			delete(out, k)
		}
	}
	for k, v := range want {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// The bookkeeping annotation reads "labels=a,b;annotations=c": label and
// annotation keys cannot contain ',', ';' or '='.
func formatTemplateKeys(labels, annotations map[string]string) string {
	if len(labels) == 0 && len(annotations) == 0 {
		return ""
	}
	keys := func(m map[string]string) string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	return "labels=" + keys(labels) + ";annotations=" + keys(annotations)
}

func parseTemplateKeys(v string) (labels, annotations []string) {
	for _, part := range strings.Split(v, ";") {
		name, list, ok := strings.Cut(part, "=")
		if !ok || list == "" {
			continue
		}
		switch name {
		case "labels":
			labels = strings.Split(list, ",")
		case "annotations":
			annotations = strings.Split(list, ",")
		}
	}
	return labels, annotations
}

func ready(reason, msg string) metav1.Condition {
	return metav1.Condition{Type: bindv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
}

func notReady(reason, msg string) metav1.Condition {
	return metav1.Condition{Type: bindv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
}

// SetupWithManager watches the keys and the Secrets the operator generated
// (the cache holds only those); imported Secrets are read again every
// SecretResyncPeriod.
func (r *BindTSIGKeyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("bind-operator")
	}
	bySecretName := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var keys bindv1alpha1.BindTSIGKeyList
		if err := r.Client.List(ctx, &keys, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, k := range keys.Items {
			if name, _, _ := clusterpods.TSIGDefaults(&k); name == o.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&k)})
			}
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindv1alpha1.BindTSIGKey{}).
		Watches(&corev1.Secret{}, bySecretName).
		Named("bindtsigkey").
		Complete(r)
}

// invalidKey reports a key the current rules refuse: no Secret is
// generated or updated for it, and no render uses its material.
func (r *BindTSIGKeyReconciler) invalidKey(ctx context.Context, key *bindv1alpha1.BindTSIGKey, msg string) error {
	status := key.Status.DeepCopy()
	status.ObservedGeneration = key.Generation
	reconcileutil.ReportInvalid(r.Recorder, key, &status.Conditions, msg)
	return reconcileutil.PatchStatus(ctx, r.Client, key, func(k *bindv1alpha1.BindTSIGKey) { k.Status = *status })
}
