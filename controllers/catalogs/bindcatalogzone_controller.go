package catalogs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/records"
)

// BindCatalogZoneReconciler reports a catalog zone. The catalog itself is
// configuration (render declares it on the primary with allow-update and
// allow-transfer for its key K, and the secondaries consume it through
// catalog-zones with keyed default-primaries); members are added and
// removed by the BindZone controller with UPDATEs signed with K. This
// reconciler transfers the catalog from the primary (keyed with K) and
// reports its members, their count and its serial.
type BindCatalogZoneReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Rechecks runs the current admission rules over the catalog
	// (docs/behaviours.md, "Stored objects are re-checked"); nil
	// re-checks nothing.
	Rechecks *reconcileutil.Rechecks
	// Endpoints locates the primary; nil means KubePods.
	Endpoints clusterpods.PodEndpoints
	// Period is how often the status is refreshed; default 30 s.
	Period time.Duration
}

// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindcatalogzones,verbs=get;list;watch
// +kubebuilder:rbac:groups=bind.unkin.net,resources=bindcatalogzones/status,verbs=patch

// Reconcile refreshes one catalog's status.
func (r *BindCatalogZoneReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cat bindv1alpha1.BindCatalogZone
	if err := r.Client.Get(ctx, req.NamespacedName, &cat); err != nil {
		return ctrl.Result{}, r.Rechecks.Gone(&cat, req.NamespacedName, err)
	}
	if msg := r.Rechecks.Check(&cat); msg != "" {
		return ctrl.Result{}, r.invalidCatalog(ctx, &cat, msg)
	}
	status := cat.Status.DeepCopy()
	status.ObservedGeneration = cat.Generation
	period := r.Period
	if period == 0 {
		period = 30 * time.Second
	}
	if err := r.observe(ctx, &cat, status); err != nil {
		reconcileutil.SetCondition(&status.Conditions, &cat, bindv1alpha1.ConditionReady, metav1.ConditionFalse, bindv1alpha1.ReasonCatalogNotServed, agent.Bound(err.Error()))
		period = min(period, 10*time.Second)
	} else {
		reconcileutil.SetCondition(&status.Conditions, &cat, bindv1alpha1.ConditionReady, metav1.ConditionTrue, bindv1alpha1.ReasonCatalogServed,
			fmt.Sprintf("the primary serves catalog %s with %d member zone(s) at serial %d.", string(cat.Spec.ZoneName), status.MemberCount, ptr.Deref(status.Serial, 0)))
	}
	if err := reconcileutil.PatchStatus(ctx, r.Client, &cat, func(c *bindv1alpha1.BindCatalogZone) { c.Status = *status }); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: period}, nil
}

func (r *BindCatalogZoneReconciler) observe(ctx context.Context, cat *bindv1alpha1.BindCatalogZone, status *bindv1alpha1.BindCatalogZoneStatus) error {
	var cluster bindv1alpha1.BindCluster
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cat.Namespace, Name: cat.Spec.ClusterRef.Name}, &cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("BindCluster %q does not exist; create it or fix spec.clusterRef", cat.Spec.ClusterRef.Name)
		}
		return err
	}
	addr, port, err := r.Endpoints.Transfer(ctx, &cluster)
	if err != nil {
		return err
	}
	key, err := clusterpods.LoadUpdateKey(ctx, r.Client, cat.Namespace, cat.Spec.TransferKeyRef.Name)
	if err != nil {
		return err
	}
	c, err := dnsclient.New(clusterpods.JoinHostPort(addr, port), &key, dnsclient.Options{Timeout: 10 * time.Second, MaxTransferRecords: 4 * maxCatalogMembers, MaxTransferBytes: maxCatalogBytes})
	if err != nil {
		return err
	}
	defer c.Close()
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	zone := string(cat.Spec.ZoneName)
	rrs, err := c.AXFR(tctx, zone)
	if err != nil {
		var rc *dnsclient.RcodeError
		if errors.As(err, &rc) {
			return fmt.Errorf("the primary refused the catalog transfer with %s (is the catalog in the running configuration, and is %q its key?): %v", rc.RcodeName(), cat.Spec.TransferKeyRef.Name, err)
		}
		return fmt.Errorf("cannot transfer the catalog from the primary: %v", err)
	}
	members := clusterpods.CatalogMembers(zone, rrs)
	status.MemberCount = int32(len(members)) //nolint:gosec // bounded by MaxTransferRecords
	status.Members = members[:min(len(members), bindv1alpha1.MaxCatalogMembersListed)]
	status.Serial = nil
	if len(rrs) > 0 {
		if soa, ok := rrs[0].(*dns.SOA); ok {
			status.Serial = ptr.To(int64(soa.Serial))
			return r.catchUpSerial(tctx, cat, &cluster, clusterpods.ZoneServer{Addr: clusterpods.JoinHostPort(addr, port), Key: key}, soa.Serial, members)
		}
	}
	return nil
}

// catchUpSerial sends a NOTIFY to the secondaries whose catalog is older
// than the primary's, and raises the primary's catalog serial past the
// secondaries' when one serves a newer one (see clusterpods/serials.go) and the primary's catalog
// lists every member it should: a re-seeded primary rebuilds the catalog
// one member at a time (the BindZone controller re-adds each), and a
// secondary that transferred a partial catalog would drop the zones it
// lacks. Secondaries that do not answer are skipped.
func (r *BindCatalogZoneReconciler) catchUpSerial(ctx context.Context, cat *bindv1alpha1.BindCatalogZone, cluster *bindv1alpha1.BindCluster, srv clusterpods.ZoneServer, primary uint32, served []string) error {
	zone := string(cat.Spec.ZoneName)
	pods, err := r.Endpoints.Pods(ctx, cluster)
	if err != nil {
		return nil // the status above stands; the next period looks again
	}
	var secs []uint32
	var behind []clusterpods.PodEndpoint
	secondaries := slices.DeleteFunc(slices.Clone(pods), func(p clusterpods.PodEndpoint) bool { return p.Primary })
	for i, st := range clusterpods.ServedSerials(ctx, secondaries, nil, zone) {
		if st.Serial == nil {
			continue
		}
		s := uint32(*st.Serial) //nolint:gosec // serials are uint32 on the wire
		secs = append(secs, s)
		if clusterpods.SerialNewer(primary, s) {
			behind = append(behind, secondaries[i])
		}
	}
	past, ahead := clusterpods.NewestSerial(primary, secs)
	if ahead {
		// The primary was read before the secondaries (clusterpods/serials.go): only
		// one still behind when read again lost its data.
		if primary, ahead, err = clusterpods.PrimaryStillBehind(ctx, srv, zone, past); err != nil {
			return nil // the primary did not answer: the next period looks again
		}
	}
	if !ahead {
		// A secondary that missed the NOTIFY of a member change (it was
		// starting, or the datagram was lost) would otherwise wait for the
		// catalog's SOA refresh (300 s) without the new members.
		if len(behind) > 0 {
			_ = clusterpods.NotifySecondaries(ctx, behind, zone, srv.Key)
		}
		return nil
	}
	missing, err := r.missingMembers(ctx, cat, served)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("the primary serves catalog serial %d, older than a secondary's %d, and lacks %d member(s) (first %s); the serial is raised once every member is back", primary, past, len(missing), missing[0])
	}
	old, raised, err := clusterpods.RaiseSerial(ctx, srv, zone, past)
	if err != nil {
		return fmt.Errorf("a secondary serves catalog serial %d, newer than the primary's %d, and raising the primary's failed: %v", past, primary, err)
	}
	if !raised {
		return nil // it moved on in the meantime
	}
	primary = old
	ctrl.LoggerFrom(ctx).Info("raised the primary's catalog serial past a secondary's (the primary lost its data?)", "catalog", zone, "primary", primary, "secondary", past)
	_ = clusterpods.NotifySecondaries(ctx, pods, zone, srv.Key)
	return nil
}

// maxCatalogMembers bounds the catalog transfer the status is read from
// (about two records per member): network input, even from our own
// primary, is bounded.
const maxCatalogMembers = 100000

// maxCatalogBytes bounds the same transfer by its records' wire size: a
// member is two records of about 80 bytes, so 100,000 members are about
// 16 MB; twice that leaves room for long names without letting a catalog
// of a few huge records hold the manager's memory.
const maxCatalogBytes = 32 << 20

// memberSettle is how long a change to a member zone waits before the
// catalog's status is refreshed; the changes within it are refreshed once.
// Each refresh transfers the whole catalog, so refreshing on every member
// event made creating n zones cost O(n²): thousands of transfers of a
// catalog of thousands while they were created (docs/behaviours.md,
// "Scale").
const memberSettle = 2 * time.Second

// SetupWithManager registers the reconciler; a change to a member zone
// (its status included, which the BindZone controller updates after adding
// the membership) refreshes the catalog's status within memberSettle.
func (r *BindCatalogZoneReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("bind-operator")
	}
	if r.Endpoints == nil {
		r.Endpoints = clusterpods.KubePods{Client: mgr.GetClient()}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&bindv1alpha1.BindCatalogZone{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&bindv1alpha1.BindZone{}, reconcileutil.EnqueueAfter(memberSettle, func(o client.Object) []reconcile.Request {
			ref := o.(*bindv1alpha1.BindZone).Spec.CatalogZoneRef
			if ref == nil {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}}
		})).
		Named("bindcatalogzone").
		Complete(r)
}

// missingMembers lists the zones that name this catalog (and are not being
// deleted) but are not among the served members, sorted.
func (r *BindCatalogZoneReconciler) missingMembers(ctx context.Context, cat *bindv1alpha1.BindCatalogZone, served []string) ([]string, error) {
	var zones bindv1alpha1.BindZoneList
	// Read only: no copy of every zone of the namespace.
	if err := r.Client.List(ctx, &zones, client.InNamespace(cat.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var missing []string
	for _, z := range zones.Items {
		ref := z.Spec.CatalogZoneRef
		if ref == nil || ref.Name != cat.Name || !z.DeletionTimestamp.IsZero() {
			continue
		}
		if name := records.CanonicalZone(string(z.Spec.ZoneName)); !slices.Contains(served, name) {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	return missing, nil
}

// invalidCatalog reports a catalog the current rules refuse: it is not
// transferred, and renders leave it and its member zones out.
func (r *BindCatalogZoneReconciler) invalidCatalog(ctx context.Context, cat *bindv1alpha1.BindCatalogZone, msg string) error {
	status := cat.Status.DeepCopy()
	status.ObservedGeneration = cat.Generation
	reconcileutil.ReportInvalid(r.Recorder, cat, &status.Conditions, msg)
	return reconcileutil.PatchStatus(ctx, r.Client, cat, func(c *bindv1alpha1.BindCatalogZone) { c.Status = *status })
}
