package reconcileutil

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Stored objects are re-checked (docs/behaviours.md): admission rules
// tighten with upgrades and flags, while objects stored before stay as
// they are, and an update that leaves the spec alone never reaches the
// webhook. Every reconciler of a stored kind asks Rechecks before it acts
// on an object, and every render leaves out the objects it refuses, so one
// object that the current rules refuse never breaks what its cluster
// serves for the others. Reconciles happen for every object when the
// manager starts, which is when new rules arrive.

// RecheckFunc runs the current admission rules that need nothing but the
// object (webhooks.Rechecker.Recheck, wired by cmd: this package does not
// import the webhooks) and returns what they refuse, nil when it passes.
type RecheckFunc func(client.Object) field.ErrorList

// Rechecks remembers each object's verdict per generation: the rules see
// only the spec, which moves the generation, so a render that re-checks
// thousands of zones costs a map lookup per zone. A nil *Rechecks
// re-checks nothing: every object passes.
type Rechecks struct {
	check RecheckFunc

	mu       sync.Mutex
	verdicts map[recheckKey]recheckVerdict
}

type recheckKey struct {
	kind string
	key  types.NamespacedName
}

type recheckVerdict struct {
	uid        types.UID
	generation int64
	msg        string // "" when the object passes
}

// NewRechecks re-checks objects with check; nil check: nothing is.
func NewRechecks(check RecheckFunc) *Rechecks {
	return &Rechecks{check: check, verdicts: map[recheckKey]recheckVerdict{}}
}

// maxInvalidMessage bounds the Ready message of an Invalid object: every
// field error of a zone with many bad records would not fit a condition.
const maxInvalidMessage = 4096

// Check returns why the current rules refuse obj: every field error, with
// the webhook's paths and sentences, in one bounded, printable message. ""
// when obj passes, is not one of the nine kinds, or r is nil. A stand-in
// for a stored object that does not decode (undecodable.go) is refused
// with the decoder's words, whatever the rules say of what is left of it.
func (r *Rechecks) Check(obj client.Object) string {
	if r == nil {
		return ""
	}
	if why := undecodable(obj); why != "" {
		return undecodableMessage(why)
	}
	kind := recheckKind(obj)
	if r.check == nil || kind == "" {
		return ""
	}
	k := recheckKey{kind, client.ObjectKeyFromObject(obj)}
	r.mu.Lock()
	v, ok := r.verdicts[k]
	r.mu.Unlock()
	if ok && v.uid == obj.GetUID() && v.generation == obj.GetGeneration() {
		return v.msg
	}
	v = recheckVerdict{uid: obj.GetUID(), generation: obj.GetGeneration()}
	if errs := r.check(obj); len(errs) > 0 {
		v.msg = agent.BoundTo(errs.ToAggregate().Error(), maxInvalidMessage)
	}
	r.mu.Lock()
	r.verdicts[k] = v
	r.mu.Unlock()
	return v.msg
}

// Gone forgets the verdict of the object of obj's kind at key when err
// says it no longer exists, and returns err without NotFound: the end of
// a reconcile's Get.
func (r *Rechecks) Gone(obj client.Object, key types.NamespacedName, err error) error {
	if r != nil && apierrors.IsNotFound(err) {
		r.mu.Lock()
		delete(r.verdicts, recheckKey{recheckKind(obj), key})
		r.mu.Unlock()
	}
	return client.IgnoreNotFound(err)
}

// recheckKind is the kind of one of the nine types, "" for anything else.
func recheckKind(obj client.Object) string {
	switch obj.(type) {
	case *bindv1alpha1.BindCluster:
		return "BindCluster"
	case *bindv1alpha1.BindZone:
		return "BindZone"
	case *bindv1alpha1.DNSRecord:
		return "DNSRecord"
	case *bindv1alpha1.BindView:
		return "BindView"
	case *bindv1alpha1.BindTSIGKey:
		return "BindTSIGKey"
	case *bindv1alpha1.BindACL:
		return "BindACL"
	case *bindv1alpha1.BindCatalogZone:
		return "BindCatalogZone"
	case *bindv1alpha1.BindPolicy:
		return "BindPolicy"
	case *bindv1alpha1.BindDNSSECPolicy:
		return "BindDNSSECPolicy"
	}
	return ""
}

// recheckedKinds lists the nine kinds for the metric, in a fixed order.
var recheckedKinds = []struct {
	kind string
	list func() client.ObjectList
}{
	{"BindCluster", func() client.ObjectList { return &bindv1alpha1.BindClusterList{} }},
	{"BindZone", func() client.ObjectList { return &bindv1alpha1.BindZoneList{} }},
	{"DNSRecord", func() client.ObjectList { return &bindv1alpha1.DNSRecordList{} }},
	{"BindView", func() client.ObjectList { return &bindv1alpha1.BindViewList{} }},
	{"BindTSIGKey", func() client.ObjectList { return &bindv1alpha1.BindTSIGKeyList{} }},
	{"BindACL", func() client.ObjectList { return &bindv1alpha1.BindACLList{} }},
	{"BindCatalogZone", func() client.ObjectList { return &bindv1alpha1.BindCatalogZoneList{} }},
	{"BindPolicy", func() client.ObjectList { return &bindv1alpha1.BindPolicyList{} }},
	{"BindDNSSECPolicy", func() client.ObjectList { return &bindv1alpha1.BindDNSSECPolicyList{} }},
}

// InvalidObjectsMetric is the gauge of the objects the current rules
// refuse, by kind.
const InvalidObjectsMetric = "bind_operator_invalid_objects"

var invalidObjectsDesc = prometheus.NewDesc(InvalidObjectsMetric,
	"Stored objects that fail the operator's current admission rules, by kind: each reports Ready=False (Invalid) and is left out of every configuration until its spec is fixed.",
	[]string{"kind"}, nil)

// Collector is the bind_operator_invalid_objects gauge. It is counted
// from reader (the manager's cache) at each scrape, so an object fixed
// or deleted leaves it at once, whichever controller saw it last; the
// verdicts are the ones remembered, and those of objects gone are
// dropped. cmd registers it in controller-runtime's registry.
func (r *Rechecks) Collector(reader client.Reader) prometheus.Collector {
	return invalidObjects{r: r, reader: reader}
}

type invalidObjects struct {
	r      *Rechecks
	reader client.Reader
}

func (c invalidObjects) Describe(ch chan<- *prometheus.Desc) { ch <- invalidObjectsDesc }

// collectTimeout bounds one scrape's reads of the cache.
const collectTimeout = 10 * time.Second

func (c invalidObjects) Collect(ch chan<- prometheus.Metric) {
	eachCachedKind(c.reader, func(kind string, objs []client.Object) {
		seen := make(map[types.NamespacedName]bool, len(objs))
		n := 0
		for _, obj := range objs {
			seen[client.ObjectKeyFromObject(obj)] = true
			if c.r.Check(obj) != "" {
				n++
			}
		}
		c.r.keepOnly(kind, seen)
		ch <- prometheus.MustNewConstMetric(invalidObjectsDesc, prometheus.GaugeValue, float64(n), kind)
	})
}

// eachCachedKind lists each of the nine kinds from reader (the manager's
// cache) and hands f that kind's objects: the cache's own, not copies, so
// f only reads them. A kind whose list fails within collectTimeout is
// skipped: a scrape gives no sample rather than a wrong one.
func eachCachedKind(reader client.Reader, f func(kind string, objs []client.Object)) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	for _, k := range recheckedKinds {
		list := k.list()
		if err := reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		objs := make([]client.Object, 0, meta.LenList(list))
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				objs = append(objs, obj)
			}
			return nil
		})
		f(k.kind, objs)
	}
}

// keepOnly drops the verdicts of kind's objects that are not in seen.
func (r *Rechecks) keepOnly(kind string, seen map[types.NamespacedName]bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.verdicts {
		if k.kind == kind && !seen[k.key] {
			delete(r.verdicts, k)
		}
	}
}

// invalidReadyMessage is the Ready message of an object the current rules
// refuse: what that means, then every field error.
func invalidReadyMessage(msg string) string {
	return "the operator's current admission rules refuse this object (they tightened after it was stored), so it is left out of the configuration and nothing it declares is applied or removed; what already runs stays as it is until the spec is fixed: " + msg
}

// ReportInvalid sets Ready=False (Invalid) on conds and records a warning
// event when the message is new, as for every other Ready=False that needs
// the user.
func ReportInvalid(rec events.EventRecorder, obj client.Object, conds *[]metav1.Condition, errs string) {
	msg := invalidReadyMessage(errs)
	if prev := meta.FindStatusCondition(*conds, bindv1alpha1.ConditionReady); rec != nil && (prev == nil || prev.Reason != bindv1alpha1.ReasonInvalid || prev.Message != msg) {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, bindv1alpha1.ReasonInvalid, "Recheck", "%s", agent.BoundTo(invalidEventNote+errs, maxEventNote))
	}
	SetCondition(conds, obj, bindv1alpha1.ConditionReady, metav1.ConditionFalse, bindv1alpha1.ReasonInvalid, msg)
}

// invalidEventNote starts the event of an Invalid object: the Ready
// message, shorter, since the API server refuses an event's note past 1 KiB.
const invalidEventNote = "refused by the operator's current admission rules, left out of the configuration until the spec is fixed: "

// maxEventNote keeps invalidEventNote and the errors, with the mark of a
// cut, within the API server's 1024 bytes.
const maxEventNote = 1000
