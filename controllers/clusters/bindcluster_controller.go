package clusters

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/inputs"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/internal/imagepolicy"
	"git.unkin.net/unkin/bind-operator/render"
)

// controlKeyEntry holds the rndc control key's material in the keys Secret.
// It is generated once and reused, so the hash does not change on reconcile.
const controlKeyEntry = "control.secret"

// BindClusterReconciler renders a BindCluster's configuration and runs it as
// a StatefulSet. It never replaces a running config with one that
// named-checkconf rejects.
type BindClusterReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Options  ClusterOptions
	Paths    render.Paths
	// Rechecks runs the current admission rules over the cluster and what
	// its render gathers (docs/behaviours.md, "Stored objects are
	// re-checked"); nil re-checks nothing.
	Rechecks *reconcileutil.Rechecks
	// SecretResyncPeriod is how often a cluster re-reads key material from
	// Secrets the operator did not generate (imported keys): those are
	// not cached, so no watch reports their changes. It is also how often
	// a cluster blocked by a NameConflict looks again. Zero means
	// DefaultSecretResyncPeriod.
	SecretResyncPeriod time.Duration
}

func (r *BindClusterReconciler) secretResync() time.Duration {
	if r.SecretResyncPeriod > 0 {
		return r.SecretResyncPeriod
	}
	return reconcileutil.DefaultSecretResyncPeriod
}

// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindclusters/status,verbs=patch
// Owned objects carry blockOwnerDeletion, which needs update on the
// cluster's finalizers.
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindzones;bindviews;bindacls;bindtsigkeys;bindcatalogzones;bindpolicies;binddnssecpolicies,verbs=get;list;watch
// Owned objects are written only with server-side apply: a patch, which
// the API server also authorizes as create when the object is new. Garbage
// collection deletes them with the cluster; nothing updates or deletes.
// +kubebuilder:rbac:groups="",resources=configmaps;services;secrets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one BindCluster's owned objects in line with its spec.
func (r *BindClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cluster bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &cluster); err != nil {
		return ctrl.Result{}, r.Rechecks.Gone(&cluster, req.NamespacedName, err)
	}
	if cluster.DeletionTimestamp != nil {
		// Owner references let the garbage collector remove the rest.
		return ctrl.Result{}, nil
	}
	status := cluster.Status.DeepCopy()
	status.ObservedGeneration = cluster.Generation

	result, err := r.reconcile(ctx, &cluster, status)
	if uerr := reconcileutil.PatchStatus(ctx, r.Client, &cluster, func(c *bindv1alpha1.BindCluster) { c.Status = *status }); uerr != nil {
		return ctrl.Result{}, errors.Join(err, uerr)
	}
	return result, err
}

func (r *BindClusterReconciler) reconcile(ctx context.Context, cluster *bindv1alpha1.BindCluster, status *bindv1alpha1.BindClusterStatus) (ctrl.Result, error) {
	logger := log.FromContext(ctx)

	// Nothing is written for a cluster the current admission rules
	// refuse: its pods keep what they run (reconcileutil/recheck.go).
	if msg := r.Rechecks.Check(cluster); msg != "" {
		return ctrl.Result{}, r.invalidCluster(ctx, cluster, status, msg)
	}

	// Nothing is written while another object holds a name this cluster
	// needs: applying would take it over (and garbage collection would
	// delete it with the cluster).
	conflicts, err := r.nameConflicts(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(conflicts) > 0 {
		msg := conflictMessage(conflicts)
		if prev := meta.FindStatusCondition(status.Conditions, bindv1alpha1.ConditionReady); prev == nil || prev.Reason != bindv1alpha1.ReasonNameConflict || prev.Message != msg {
			r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, bindv1alpha1.ReasonNameConflict, "Reconcile", "%s", msg)
		}
		reconcileutil.SetCondition(&status.Conditions, cluster, bindv1alpha1.ConditionReady, metav1.ConditionFalse, bindv1alpha1.ReasonNameConflict, msg)
		return ctrl.Result{RequeueAfter: r.secretResync()}, nil
	}

	// Nor while the cluster pins an image the operator may no longer run
	// (the allowed list was narrowed, or an upgrade moved the default
	// repositories, after the webhook admitted it): a new StatefulSet
	// would roll every pod onto it, with the cluster's keys mounted.
	// Neither is the config written: a pod restarted for any reason
	// would start on a configuration that was never rolled out.
	if v := imagepolicy.Violations(&cluster.Spec, r.Options.allowedImages()); len(v) > 0 {
		return ctrl.Result{}, r.imageNotAllowed(ctx, cluster, status, v)
	}

	// Services first: the primary Service's ClusterIP is the only address
	// restart-scoped config may name, and it exists as soon as the Service does.
	primaryIP, err := r.applyServices(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	status.PrimaryAddress, err = TransferAddress(ctx, r.Client, cluster, primaryIP)
	if err != nil {
		return ctrl.Result{}, err
	}

	// Before anything is rendered: the events of what arrives meanwhile
	// would otherwise each cost a render and a named-checkconf run.
	running, err := r.runningHash(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait := firstStartWait(cluster, running, time.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}

	// A read error stops here: taken for "no Secret yet", it would
	// generate new control and view keys and roll every pod.
	currentKeys, err := clusterpods.KeysData(ctx, r.Client, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	ctlKey, err := controlKey(currentKeys)
	if err != nil {
		return ctrl.Result{}, err
	}
	in, err := inputs.GatherInput(ctx, r.Client, r.Rechecks, cluster, primaryIP, ctlKey, r.Paths)
	if inputs.RenderRefused(err) {
		// A key the cluster uses names a Secret it has no right to, or the
		// cluster names an object the current rules refuse: say so, and
		// leave the running config alone, as for a failed render.
		msg := fmt.Sprintf("the configuration cannot be rendered: %v", err)
		reconcileutil.SetCondition(&status.Conditions, cluster, bindv1alpha1.ConditionConfigValid, metav1.ConditionFalse, bindv1alpha1.ReasonRenderFailed, msg)
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, bindv1alpha1.ReasonRenderFailed, "Render", "%s", msg)
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if in.ViewKeys, err = clusterpods.ViewKeys(currentKeys, in.Views, true); err != nil {
		return ctrl.Result{}, err
	}
	rendered, err := render.Render(in)
	if err != nil {
		// Usually something referenced does not exist yet (a key's Secret):
		// try again shortly, and leave the running config alone.
		msg := fmt.Sprintf("the configuration cannot be rendered: %v", err)
		reconcileutil.SetCondition(&status.Conditions, cluster, bindv1alpha1.ConditionConfigValid, metav1.ConditionFalse, bindv1alpha1.ReasonRenderFailed, msg)
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, bindv1alpha1.ReasonRenderFailed, "Render", "%s", msg)
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	rendered.SecretData[controlKeyEntry] = []byte(ctlKey.Secret)
	clusterpods.KeepViewKeys(rendered.SecretData, in.ViewKeys)
	hash := render.ConfigHash(rendered)
	tlsEntries, err := r.agentTLS(ctx, cluster, currentKeys)
	if err != nil {
		return ctrl.Result{}, err
	}

	if hash != running && r.Options.NamedCheckconf != "" {
		if err := render.Check(ctx, in, r.Options.NamedCheckconf); err != nil {
			msg := fmt.Sprintf("named-checkconf rejected the new configuration, so the pods keep running the previous one: %v", err)
			logger.Info("rendered config rejected", "cluster", cluster.Name, "reason", err.Error())
			reconcileutil.SetCondition(&status.Conditions, cluster, bindv1alpha1.ConditionConfigValid, metav1.ConditionFalse, bindv1alpha1.ReasonCheckFailed, msg)
			r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, bindv1alpha1.ReasonCheckFailed, "Check", "%s", msg)
			return ctrl.Result{}, nil
		}
	}
	reconcileutil.SetCondition(&status.Conditions, cluster, bindv1alpha1.ConditionConfigValid, metav1.ConditionTrue, bindv1alpha1.ReasonConfigValid, "named-checkconf accepted the rendered configuration.")

	for k, v := range tlsEntries {
		rendered.SecretData[k] = v
	}
	if err := r.applyConfig(ctx, cluster, rendered); err != nil {
		return ctrl.Result{}, err
	}
	sts, err := r.applyStatefulSet(ctx, cluster, hash)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.applyPolicies(ctx, cluster); err != nil {
		return ctrl.Result{}, err
	}
	if hash != running && running != "" {
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, bindv1alpha1.ReasonRollingOut, "Roll", "configuration changed (hash %s), rolling the pods once", shortHash(hash))
	}
	status.ConfigHash = hash
	status.Image, status.AgentImage = templateImages(sts)
	r.observeStatefulSet(cluster, status, sts)
	if r.readsUncachedSecrets(ctx, cluster, in) {
		return ctrl.Result{RequeueAfter: r.secretResync()}, nil
	}
	return ctrl.Result{}, nil
}

// imageNotAllowed reports a cluster that pins images outside the allowed
// list: Ready False (ImageNotAllowed) with a message naming each field,
// its image and the allowed prefixes, a warning event when that message
// is new, and the images the StatefulSet still runs. No requeue: the
// cluster is reconciled again when its spec changes, and the list only
// changes with a manager restart, which reconciles every cluster.
func (r *BindClusterReconciler) imageNotAllowed(ctx context.Context, cluster *bindv1alpha1.BindCluster, status *bindv1alpha1.BindClusterStatus, violations []imagepolicy.Violation) error {
	msg := imageNotAllowedMessage(violations, r.Options.allowedImages())
	if prev := meta.FindStatusCondition(status.Conditions, bindv1alpha1.ConditionReady); prev == nil || prev.Reason != bindv1alpha1.ReasonImageNotAllowed || prev.Message != msg {
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, bindv1alpha1.ReasonImageNotAllowed, "Reconcile", "%s", msg)
	}
	reconcileutil.SetCondition(&status.Conditions, cluster, bindv1alpha1.ConditionReady, metav1.ConditionFalse, bindv1alpha1.ReasonImageNotAllowed, msg)
	var sts appsv1.StatefulSet
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: clusterpods.StatefulSetName(cluster)}, &sts)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	status.Image, status.AgentImage = templateImages(&sts)
	return nil
}

// imageNotAllowedMessage says which pinned images are outside allowed and
// what to do about them.
func imageNotAllowedMessage(violations []imagepolicy.Violation, allowed []string) string {
	named := make([]string, len(violations))
	for i, v := range violations {
		named[i] = fmt.Sprintf("spec.%s %q", v.Field, v.Image)
	}
	what, set, it := named[0]+" is not an image", "Set spec."+violations[0].Field, "it"
	if len(violations) > 1 {
		what, set, it = strings.Join(named, " and ")+" are not images", "Set each", "them"
	}
	return fmt.Sprintf("%s the operator may run: it runs only images starting with %s (its --allowed-images), so the pods keep the images and configuration they run and no change rolls out. %s to an image under one of those prefixes, or remove %s to run the operator's default, or ask the operator's administrator to add %s to --allowed-images.",
		what, imagepolicy.Prefixes(allowed), set, it, it)
}

// firstStartSettle is how old a BindCluster must be before its pods are
// first created. A cluster is usually applied in one go with its keys,
// ACLs, policies and catalogs (kubectl apply of a folder, a GitOps sync).
// Rendered the moment it appears, it would start its pods without the
// objects that arrive a second later and roll them all once when they do:
// a restart on every new cluster, seen in every e2e failure dump before
// this wait. Objects applied later still roll the cluster once, as any
// config change does.
const firstStartSettle = 3 * time.Second

// firstStartWait is how long cluster's first StatefulSet should still wait
// (firstStartSettle); zero once the cluster has one (running is its hash)
// or is old enough.
func firstStartWait(cluster *bindv1alpha1.BindCluster, running string, now time.Time) time.Duration {
	if running != "" || cluster.CreationTimestamp.IsZero() {
		return 0
	}
	return max(0, firstStartSettle-now.Sub(cluster.CreationTimestamp.Time))
}

// readsUncachedSecrets is true when a key the config uses has its material
// in a Secret the operator did not generate (imported): such Secrets are
// not cached, so only a periodic re-render sees them change.
func (r *BindClusterReconciler) readsUncachedSecrets(ctx context.Context, cluster *bindv1alpha1.BindCluster, in render.Input) bool {
	if len(in.Keys) == 0 {
		return false
	}
	var keys bindv1alpha1.BindTSIGKeyList
	if err := r.Client.List(ctx, &keys, client.InNamespace(cluster.Namespace)); err != nil {
		return true
	}
	for _, k := range keys.Items {
		if _, used := in.Keys[k.Name]; !used {
			continue
		}
		c := meta.FindStatusCondition(k.Status.Conditions, bindv1alpha1.ConditionReady)
		if k.Spec.ImportExisting || c == nil || c.Status != metav1.ConditionTrue || c.Reason != bindv1alpha1.ReasonKeyGenerated {
			return true
		}
	}
	return false
}

// TransferAddress is where secondaries transfer from: the primary Service's
// ClusterIP, or the primary pod's IP while the Service has none (headless or
// not yet allocated). Only the status shows the fallback; config never does.
func TransferAddress(ctx context.Context, c client.Reader, cluster *bindv1alpha1.BindCluster, clusterIP string) (string, error) {
	if clusterIP != "" {
		return clusterIP, nil
	}
	var pod corev1.Pod
	err := c.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: clusterpods.PrimaryPodName(cluster)}, &pod)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	return pod.Status.PodIP, err
}

// controlKey returns the rndc control key, generated once and kept in the
// keys Secret (current is its data, nil before the first reconcile).
func controlKey(current map[string][]byte) (render.TSIGKey, error) {
	key := render.TSIGKey{Name: bindv1alpha1.ControlKeyName, Algorithm: string(bindv1alpha1.TSIGHMACSHA256)}
	if existing := current[controlKeyEntry]; len(existing) > 0 {
		key.Secret = string(existing)
		return key, nil
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return key, err
	}
	key.Secret = base64.StdEncoding.EncodeToString(buf)
	return key, nil
}

// runningHash is the hash on the StatefulSet's pod template, "" before the
// first rollout.
func (r *BindClusterReconciler) runningHash(ctx context.Context, cluster *bindv1alpha1.BindCluster) (string, error) {
	var sts appsv1.StatefulSet
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: clusterpods.StatefulSetName(cluster)}, &sts)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return sts.Spec.Template.Annotations[bindv1alpha1.AnnotationConfigHash], nil
}

func (r *BindClusterReconciler) applyServices(ctx context.Context, cluster *bindv1alpha1.BindCluster) (string, error) {
	var primaryIP string
	for _, svc := range buildServices(cluster) {
		// The ClusterIP (except the headless one's None) and node ports are
		// the API server's to allocate: the desired Services leave them out,
		// so they are kept.
		if err := r.apply(ctx, cluster, svc); err != nil {
			return "", err
		}
		if svc.Name == clusterpods.PrimarySvcName(cluster) && svc.Spec.ClusterIP != corev1.ClusterIPNone {
			primaryIP = svc.Spec.ClusterIP
		}
	}
	return primaryIP, nil
}

func (r *BindClusterReconciler) applyConfig(ctx context.Context, cluster *bindv1alpha1.BindCluster, rendered render.Result) error {
	// The seeds (policy zones' current rules) share the ConfigMap but not
	// the hash: a new pod starts from them, running pods get rule edits
	// from the BindPolicy controller through their agent.
	data := maps.Clone(rendered.ConfigData)
	maps.Copy(data, rendered.SeedData)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: clusterpods.ConfigMapName(cluster), Namespace: cluster.Namespace, Labels: clusterpods.ObjectLabels(cluster)},
		Data:       data,
	}
	if err := r.apply(ctx, cluster, cm); err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clusterpods.KeysSecretName(cluster), Namespace: cluster.Namespace, Labels: clusterpods.ObjectLabels(cluster)},
		Type:       corev1.SecretTypeOpaque,
		Data:       rendered.SecretData,
	}
	return r.apply(ctx, cluster, secret)
}

// applyStatefulSet applies the desired StatefulSet. The API server merges
// the pod template with what it defaulted, so the same config applies as
// no change and the pods roll only when the hash moves. Selector, service
// name, pod management and claim templates cannot change on an existing
// StatefulSet: when the desired ones differ (a new storage size or class),
// the live ones are applied, as before SSA, rather than failing every
// reconcile.
func (r *BindClusterReconciler) applyStatefulSet(ctx context.Context, cluster *bindv1alpha1.BindCluster, hash string) (*appsv1.StatefulSet, error) {
	sts := buildStatefulSet(cluster, r.Options, r.Paths, hash)
	var live appsv1.StatefulSet
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(sts), &live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	default:
		keepImmutable(&sts.Spec, &live.Spec)
	}
	if err := r.apply(ctx, cluster, sts); err != nil {
		return nil, err
	}
	return sts, nil
}

// keepImmutable replaces the desired immutable fields of a StatefulSet with
// the live ones where they differ semantically (the live ones also hold
// what the API server defaulted, so equal ones are left as desired).
func keepImmutable(desired, live *appsv1.StatefulSetSpec) {
	if !equality.Semantic.DeepDerivative(desired.Selector, live.Selector) {
		desired.Selector = live.Selector
	}
	if desired.ServiceName != live.ServiceName {
		desired.ServiceName = live.ServiceName
	}
	if desired.PodManagementPolicy != live.PodManagementPolicy {
		desired.PodManagementPolicy = live.PodManagementPolicy
	}
	// DeepDerivative takes an empty list for equal to any: storage turned
	// off must keep the claims too.
	if len(desired.VolumeClaimTemplates) != len(live.VolumeClaimTemplates) ||
		!equality.Semantic.DeepDerivative(desired.VolumeClaimTemplates, live.VolumeClaimTemplates) {
		desired.VolumeClaimTemplates = live.VolumeClaimTemplates
	}
}

func (r *BindClusterReconciler) applyPolicies(ctx context.Context, cluster *bindv1alpha1.BindCluster) error {
	if err := r.apply(ctx, cluster, buildPDB(cluster)); err != nil {
		return err
	}
	return r.apply(ctx, cluster, buildNetworkPolicy(cluster, r.Options))
}

// apply applies one object the cluster owns (controller reference for the
// garbage collector) and reads the result back into it.
func (r *BindClusterReconciler) apply(ctx context.Context, cluster *bindv1alpha1.BindCluster, obj client.Object) error {
	if err := controllerutil.SetControllerReference(cluster, obj, r.Client.Scheme()); err != nil {
		return err
	}
	return reconcileutil.Apply(ctx, r.Client, obj)
}

// observeStatefulSet turns the StatefulSet's status into Ready and Progressing.
func (r *BindClusterReconciler) observeStatefulSet(cluster *bindv1alpha1.BindCluster, status *bindv1alpha1.BindClusterStatus, sts *appsv1.StatefulSet) {
	want := ptr.Deref(sts.Spec.Replicas, 1)
	status.Replicas = want
	status.ReadyReplicas = sts.Status.ReadyReplicas
	status.Selector = labels.SelectorFromSet(clusterpods.SelectorLabels(cluster)).String()

	rolling := sts.Status.ObservedGeneration < sts.Generation ||
		sts.Status.UpdatedReplicas < want ||
		(sts.Status.UpdateRevision != "" && sts.Status.CurrentRevision != sts.Status.UpdateRevision)
	if rolling {
		reconcileutil.SetCondition(&status.Conditions, cluster, bindv1alpha1.ConditionProgressing, metav1.ConditionTrue, bindv1alpha1.ReasonRollingOut,
			fmt.Sprintf("%d of %d pods run the current configuration.", sts.Status.UpdatedReplicas, want))
	} else {
		reconcileutil.SetCondition(&status.Conditions, cluster, bindv1alpha1.ConditionProgressing, metav1.ConditionFalse, bindv1alpha1.ReasonUpToDate, "every pod runs the current configuration.")
	}
	if sts.Status.ReadyReplicas >= want && !rolling {
		reconcileutil.SetCondition(&status.Conditions, cluster, bindv1alpha1.ConditionReady, metav1.ConditionTrue, bindv1alpha1.ReasonAllReady, fmt.Sprintf("%d of %d pods are ready.", sts.Status.ReadyReplicas, want))
	} else {
		reconcileutil.SetCondition(&status.Conditions, cluster, bindv1alpha1.ConditionReady, metav1.ConditionFalse, bindv1alpha1.ReasonNotReady, fmt.Sprintf("%d of %d pods are ready.", sts.Status.ReadyReplicas, want))
	}
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// invalidCluster reports a cluster the current rules refuse, and leaves
// everything it runs as it is, as for ImageNotAllowed: no Service,
// ConfigMap, Secret or StatefulSet is written, so its pods keep their
// configuration and nothing rolls.
func (r *BindClusterReconciler) invalidCluster(ctx context.Context, cluster *bindv1alpha1.BindCluster, status *bindv1alpha1.BindClusterStatus, msg string) error {
	reconcileutil.ReportInvalid(r.Recorder, cluster, &status.Conditions, msg)
	var sts appsv1.StatefulSet
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: clusterpods.StatefulSetName(cluster)}, &sts)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	status.Image, status.AgentImage = templateImages(&sts)
	return nil
}
