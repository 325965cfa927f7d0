package reconcileutil

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/rechecktest"
)

func TestRechecksRemembersEachGenerationsVerdict(t *testing.T) {
	g := NewWithT(t)
	var calls int
	rc := NewRechecks(rechecktest.LabelRules(&calls))
	z := rechecktest.Refused(&bindv1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "z", UID: "u1", Generation: 1}}, "records")
	g.Expect(rc.Check(z)).To(Equal(`spec.records: Invalid value: "x": is not allowed any more; write y`))
	g.Expect(rc.Check(z)).NotTo(BeEmpty())
	g.Expect(calls).To(Equal(1), "the same generation is checked once")

	fixed := z.DeepCopy()
	fixed.Labels = nil
	fixed.Generation = 2
	g.Expect(rc.Check(fixed)).To(BeEmpty(), "a new generation is checked again")
	again := z.DeepCopy()
	again.UID = "u2"
	g.Expect(rc.Check(again)).NotTo(BeEmpty(), "an object made again under the name is another object")
	g.Expect(calls).To(Equal(3))

	// A verdict is per kind: a BindView of the same name is its own.
	g.Expect(rc.Check(&bindv1alpha1.BindView{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "z", UID: "u2", Generation: 1}})).To(BeEmpty())

	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "bind.unkin.net", Resource: "bindzones"}, "z")
	g.Expect(rc.Gone(&bindv1alpha1.BindZone{}, types.NamespacedName{Namespace: "ns", Name: "z"}, notFound)).To(Succeed())
	g.Expect(rc.verdicts).NotTo(HaveKey(recheckKey{"BindZone", types.NamespacedName{Namespace: "ns", Name: "z"}}))

	var none *Rechecks
	g.Expect(none.Check(z)).To(BeEmpty(), "no Rechecks: every object passes")
	g.Expect(NewRechecks(nil).Check(z)).To(BeEmpty())
	g.Expect(none.Gone(&bindv1alpha1.BindZone{}, types.NamespacedName{}, notFound)).To(Succeed())
}

func TestRecheckMessageIsBounded(t *testing.T) {
	rc := NewRechecks(func(client.Object) field.ErrorList {
		var errs field.ErrorList
		for i := range 500 {
			errs = append(errs, field.Invalid(field.NewPath("spec", "records").Index(i), "x\n\x1b[31m", "bad data"))
		}
		return errs
	})
	msg := rc.Check(&bindv1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "z"}})
	g := NewWithT(t)
	g.Expect(len(msg)).To(BeNumerically("<=", maxInvalidMessage+3))
	g.Expect(msg).NotTo(ContainSubstring("\x1b"))
	g.Expect(msg).To(HavePrefix("[spec.records[0]: Invalid value:"))
}

// invalidCounts gathers bind_operator_invalid_objects by kind.
func invalidCounts(g Gomega, c prometheus.Collector) map[string]float64 {
	out := map[string]float64{}
	for _, m := range gathered(g, c, InvalidObjectsMetric) {
		out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	return out
}

// gathered is what collector c gives for the metric name, through a
// registry of its own (which checks the samples as a scrape would).
func gathered(g Gomega, c prometheus.Collector, name string) []*dto.Metric {
	reg := prometheus.NewRegistry()
	g.Expect(reg.Register(c)).To(Succeed())
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

// The gauge counts what the cache holds at each scrape: an object fixed
// or deleted leaves it at once, and every kind has its series.
func TestInvalidObjectsGauge(t *testing.T) {
	g := NewWithT(t)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 1}
	}
	bad := rechecktest.Refused(&bindv1alpha1.BindZone{ObjectMeta: meta("bad")}, "records")
	c := fake.NewClientBuilder().WithScheme(rechecktest.Scheme(t)).WithObjects(
		bad,
		rechecktest.Refused(&bindv1alpha1.BindZone{ObjectMeta: meta("worse")}, "records"),
		&bindv1alpha1.BindZone{ObjectMeta: meta("good")},
		rechecktest.Refused(&bindv1alpha1.BindACL{ObjectMeta: meta("acl")}, "entries"),
		rechecktest.Refused(&bindv1alpha1.BindCluster{ObjectMeta: meta("dns")}, "extraOptions"),
		&bindv1alpha1.DNSRecord{ObjectMeta: meta("www")},
	).Build()
	rc := NewRechecks(rechecktest.LabelRules(nil))
	col := rc.Collector(c)
	g.Expect(invalidCounts(g, col)).To(Equal(map[string]float64{
		"BindCluster": 1, "BindZone": 2, "DNSRecord": 0, "BindView": 0, "BindTSIGKey": 0,
		"BindACL": 1, "BindCatalogZone": 0, "BindPolicy": 0, "BindDNSSECPolicy": 0,
	}))

	g.Expect(c.Delete(context.Background(), bad)).To(Succeed())
	var worse bindv1alpha1.BindZone
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "worse"}, &worse)).To(Succeed())
	worse.Labels = nil
	worse.Generation = 2 // the fake client does not move it
	g.Expect(c.Update(context.Background(), &worse)).To(Succeed())
	g.Expect(invalidCounts(g, col)).To(HaveKeyWithValue("BindZone", 0.0))
	g.Expect(rc.verdicts).NotTo(HaveKey(recheckKey{"BindZone", types.NamespacedName{Namespace: "ns", Name: "bad"}}), "the verdicts of objects gone are dropped")
}

// The API server refuses an event whose note passes 1 KiB: the event of
// an Invalid object is cut, its Ready message is not.
func TestInvalidEventFitsTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	recorder := events.NewFakeRecorder(1)
	var conds []metav1.Condition
	errs := strings.Repeat("spec.records[0]: Invalid value: \"x\": bad data, ", 100)
	ReportInvalid(recorder, &bindv1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "z"}}, &conds, errs)
	var ev string
	g.Expect(recorder.Events).To(Receive(&ev))
	note := strings.TrimPrefix(ev, "Warning Invalid ")
	g.Expect(len(note)).To(BeNumerically("<=", 1024))
	g.Expect(note).To(HavePrefix(invalidEventNote + "spec.records[0]"))
	g.Expect(rechecktest.ReadyOf(conds).Message).To(HaveSuffix(errs))
}
