package webhooks

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/quota"
)

// Quotas (docs/behaviours.md, "Quotas"): every kind's validating webhook,
// and the DNSRecord's one call, asks the tracker whether a create, or an
// update that grows the object, would take its namespace or its zone past
// a limit (internal/quota). The object is judged first: an invalid one is
// refused for what is wrong with it, and only a valid one is counted.
//
// Where a refusal points:
//
//   - the namespace's object count: metadata.namespace (the namespace is
//     full, whatever the object);
//   - the namespace's bytes: spec (this spec does not fit in what is
//     left);
//   - a zone's record sets or bytes: a DNSRecord's spec.zoneRef, a
//     BindZone's spec.records.
//
// A refusal names the namespace or the zone the requester wrote, its use
// and the limit, never another object.

// quotas is the webhooks' quota check.
type quotas struct {
	tracker *quota.Tracker
	// reader reads a DNSRecord's zone and the labels of the namespaces
	// whose records a zone may admit, only when a zone is near its limit.
	reader client.Reader
}

// withQuota is v with the quota check after its own; q nil: v as it is.
func withQuota[T client.Object](v admission.Validator[T], kind string, q *quotas) admission.Validator[T] {
	if q == nil {
		return v
	}
	return quotaValidator[T]{Validator: v, kind: kind, q: q}
}

type quotaValidator[T client.Object] struct {
	admission.Validator[T]
	kind string
	q    *quotas
}

func (v quotaValidator[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	warns, err := v.Validator.ValidateCreate(ctx, obj)
	if err != nil {
		return warns, err
	}
	return warns, invalid(v.kind, obj.GetName(), v.q.check(ctx, nil, obj))
}

func (v quotaValidator[T]) ValidateUpdate(ctx context.Context, oldObj, newObj T) (admission.Warnings, error) {
	warns, err := v.Validator.ValidateUpdate(ctx, oldObj, newObj)
	if err != nil {
		return warns, err
	}
	return warns, invalid(v.kind, newObj.GetName(), v.q.check(ctx, oldObj, newObj))
}

var (
	namespacePath = field.NewPath("metadata", "namespace")
	specPath      = field.NewPath("spec")
)

// check is what obj, replacing old (nil on a create), would take past a
// quota. An object being deleted is never refused.
func (q *quotas) check(ctx context.Context, old, obj client.Object) field.ErrorList {
	limits := q.tracker.Limits()
	if limits.Off() || obj.GetDeletionTimestamp() != nil {
		return nil
	}
	ns := namespaceOf(ctx, obj.GetNamespace())
	c, ok := quota.Of(obj, ns)
	if !ok {
		return nil
	}
	var prev quota.Contribution
	if old != nil {
		prev, _ = quota.Of(old, ns)
	}
	if err := q.tracker.WaitSynced(ctx); err != nil {
		return field.ErrorList{field.InternalError(namespacePath, fmt.Errorf("the operator has not yet counted what this namespace holds (%w); retry in a moment", err))}
	}
	var errs field.ErrorList
	for _, e := range limits.Namespace(ns, q.tracker.Namespace(ns), c.Object.Minus(prev.Object)) {
		if e.Quota == quota.NamespaceObjects {
			errs = append(errs, field.Forbidden(namespacePath, e.Message))
		} else {
			errs = append(errs, field.Forbidden(specPath, e.Message))
		}
	}
	if c.Zone.Name == "" || (limits.ZoneRecords == 0 && limits.ZoneBytes == 0) {
		return errs
	}
	add := c.InZone
	if prev.Zone == c.Zone && prev.Writer == c.Writer {
		add = add.Minus(prev.InZone)
	}
	return append(errs, q.checkZone(ctx, obj, c, add, limits)...)
}

// checkZone is what adding add, obj's part, to obj's zone would exceed.
// Only what the zone admits counts: its inline records, the DNSRecords of
// its namespace and those of the namespaces its spec.allowedRecords
// selects. A DNSRecord the zone does not admit writes nothing to it, so a
// tenant of another namespace cannot fill the zone owner's quota (the
// squatter of issue 44, item 3). That takes reads (the zone, namespace
// labels), so they are made only when everything that names the zone,
// admitted or not, would pass a limit: near a limit, not on every call.
func (q *quotas) checkZone(ctx context.Context, obj client.Object, c quota.Contribution, add quota.Use, limits quota.Limits) field.ErrorList {
	if add.Count <= 0 && add.Bytes <= 0 {
		return nil
	}
	use := q.tracker.Zone(c.Zone)
	if len(limits.Zone(c.Zone, use.Total(), add)) == 0 {
		return nil
	}
	path := specPath.Child("zoneRef")
	z, ok := obj.(*v1alpha1.BindZone)
	if ok {
		path = specPath.Child("records")
	} else {
		var zone v1alpha1.BindZone
		err := q.reader.Get(ctx, c.Zone, &zone)
		switch {
		case apierrors.IsNotFound(err):
			z = nil
		case err != nil:
			return field.ErrorList{field.InternalError(path, fmt.Errorf("reading BindZone %s to count what it holds: %w", c.Zone, err))}
		default:
			z = &zone
		}
	}
	a := newAdmitter(q.reader, z, c.Zone.Namespace)
	if c.Writer != "" && !a.admits(ctx, c.Writer) {
		// Not admitted, so not in the zone: the DNSRecord webhook has
		// refused it unless the zone does not exist yet, and it reports
		// NotAdmitted until it is.
		return nil
	}
	counted := use.Inline
	writers := slices.Sorted(maps.Keys(use.Writers))
	for _, w := range writers {
		if a.admits(ctx, w) {
			counted = counted.Plus(use.Writers[w])
		}
	}
	if a.err != nil {
		return field.ErrorList{field.InternalError(path, a.err)}
	}
	var errs field.ErrorList
	for _, e := range limits.Zone(c.Zone, counted, add) {
		errs = append(errs, field.Forbidden(path, e.Message))
	}
	return errs
}

// admitter tells whether zone z, of namespace zoneNS (z nil: it does not
// exist), admits the DNSRecords of a namespace, by its labels alone: its
// own namespace always, others when spec.allowedRecords selects them. The
// record's name and type rules are left out of the count: a record of an
// admitted namespace that they refuse was refused at admission, unless it
// was stored before the zone narrowed them. Each namespace is read once;
// err is the first read that failed.
type admitter struct {
	reader client.Reader
	zone   *v1alpha1.BindZone
	zoneNS string
	sel    labels.Selector // nil: only the zone's namespace
	seen   map[string]bool
	err    error
}

func newAdmitter(reader client.Reader, z *v1alpha1.BindZone, zoneNS string) *admitter {
	a := &admitter{reader: reader, zone: z, zoneNS: zoneNS, seen: map[string]bool{}}
	if z != nil && z.Spec.AllowedRecords != nil {
		// A selector that does not parse admits no other namespace, as
		// records.Admits says.
		if sel, err := metav1.LabelSelectorAsSelector(&z.Spec.AllowedRecords.Namespaces); err == nil {
			a.sel = sel
		}
	}
	return a
}

func (a *admitter) admits(ctx context.Context, ns string) bool {
	if ns == a.zoneNS {
		return true
	}
	if a.sel == nil {
		return false
	}
	if v, ok := a.seen[ns]; ok {
		return v
	}
	var n corev1.Namespace
	if err := a.reader.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil && !apierrors.IsNotFound(err) && a.err == nil {
		a.err = fmt.Errorf("reading namespace %q to count what BindZone %s/%s admits: %w", ns, a.zone.Namespace, a.zone.Name, err)
	}
	a.seen[ns] = a.sel.Matches(labels.Set(n.Labels))
	return a.seen[ns]
}
