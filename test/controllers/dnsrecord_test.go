package controllers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// recordEnv is a namespace whose zone example.com lives on a real named.
type recordEnv struct {
	*fixture
	server *bindtest.Server
	tsig   dnsclient.Key
}

func newRecordEnv(t *testing.T) *recordEnv {
	t.Helper()
	tsig := bindtest.NewKey("upd", "hmac-sha256")
	srv := bindtest.Start(t, bindtest.Options{
		Keys: []bindtest.Key{tsig},
		Files: map[string]string{
			"example.com.db": bindtest.SeedZone("example.com.", 1),
			"locked.test.db": bindtest.SeedZone("locked.test.", 1),
		},
		Config: `zone "example.com" { type primary; file "example.com.db"; allow-update { key "upd"; }; };
zone "locked.test" { type primary; file "locked.test.db"; allow-update { none; }; };`,
	})
	f := keyNamespace(t)
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "upd-key"}, Data: map[string][]byte{v1.TSIGSecretKey: []byte(tsig.Secret)}})
	f.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "upd"}, Spec: v1.BindTSIGKeySpec{ImportExisting: true, SecretName: "upd-key"}})
	for name, zone := range map[string]string{"example-com": "example.com", "locked": "locked.test"} {
		f.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: v1.DomainName(zone),
			UpdateKeyRef: &v1.LocalObjectReference{Name: "upd"},
			Records:      []v1.RecordSet{{Name: "inline", Type: "A", Values: []string{"192.0.2.99"}}},
		}})
	}
	key, err := dnsclient.NewKey(tsig.Name, tsig.Algorithm, tsig.Secret)
	testkit.Must(t, err)
	resolver.set(f.ns, "example.com", srv.DNSAddr, key)
	resolver.set(f.ns, "locked.test", srv.DNSAddr, key)
	return &recordEnv{fixture: f, server: srv, tsig: key}
}

// served asks named for name/type and returns the rdata it serves, sorted.
func (e *recordEnv) served(name string, t uint16) []string {
	e.t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), t)
	in, err := dns.Exchange(m, e.server.DNSAddr)
	if err != nil {
		e.t.Fatalf("query %s: %v", name, err)
	}
	var out []string
	for _, rr := range in.Answer {
		if rr.Header().Rrtype == t {
			out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
		}
	}
	slices.Sort(out)
	return out
}

func (e *recordEnv) waitServed(name string, t uint16, want ...string) {
	e.t.Helper()
	e.g.Eventually(func() []string { return e.served(name, t) }).Should(ConsistOf(want), "%s %s to serve %v", name, dns.TypeToString[t], want)
}

func (e *recordEnv) record(name string) *v1.DNSRecord {
	e.t.Helper()
	var r v1.DNSRecord
	testkit.Must(e.t, k8sClient.Get(ctx, e.key(name), &r))
	return &r
}

func (e *recordEnv) waitRecord(name, condType string, status metav1.ConditionStatus, reason string) *v1.DNSRecord {
	e.t.Helper()
	var r *v1.DNSRecord
	e.g.Eventually(func(g Gomega) {
		r = e.record(name)
		c := meta.FindStatusCondition(r.Status.Conditions, condType)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status))
		g.Expect(c.Reason).To(Equal(reason))
		g.Expect(r.Status.ObservedGeneration).To(Equal(r.Generation))
	}).Should(Succeed(), "DNSRecord %s %s=%s/%s", name, condType, status, reason)
	return r
}

func newRecord(name, owner, typ string, values ...string) *v1.DNSRecord {
	return &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Name: "example-com"}, Name: v1.RecordName(owner), Type: v1.RecordType(typ), Values: values,
	}}
}

func TestDNSRecordLifecycle(t *testing.T) {
	e := newRecordEnv(t)
	e.create(newRecord("api", "api", "A", "192.0.2.80", "192.0.2.81"))
	r := e.waitRecord("api", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
	e.waitServed("api.example.com", dns.TypeA, "192.0.2.80", "192.0.2.81")
	if r.Status.FQDN != "api.example.com." || r.Status.LastRcode != "NOERROR" || len(r.Status.AppliedValues) != 2 {
		t.Errorf("status = %+v", r.Status)
	}

	ttl := v1.TTL(120)
	updateLatest(t, e.key("api"), r, func(r *v1.DNSRecord) {
		r.Spec.Values = []string{"192.0.2.82"}
		r.Spec.TTL = &ttl
	})
	e.waitServed("api.example.com", dns.TypeA, "192.0.2.82")
	e.waitRecord("api", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)

	// No finalizer holds the object: the DELETE removes it, and the
	// operator removes its data from the last state it saw.
	testkit.Must(t, k8sClient.Delete(ctx, r))
	if err := k8sClient.Get(ctx, e.key("api"), r); !apierrors.IsNotFound(err) {
		t.Fatalf("the DNSRecord is still there after its DELETE (finalizers %v): %v", r.Finalizers, err)
	}
	e.waitServed("api.example.com", dns.TypeA)
}

// TestDNSRecordDeletedAndCreatedAgain: a record deleted and created again
// at once under the same name, with other values: the old data goes
// before the new record writes, so the new values are served, alone.
func TestDNSRecordDeletedAndCreatedAgain(t *testing.T) {
	e := newRecordEnv(t)
	e.create(newRecord("again", "again", "A", "192.0.2.50"))
	r := e.waitRecord("again", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
	e.waitServed("again.example.com", dns.TypeA, "192.0.2.50")
	testkit.Must(t, k8sClient.Delete(ctx, r))
	e.create(newRecord("again", "again", "A", "192.0.2.51"))
	e.waitRecord("again", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
	e.waitServed("again.example.com", dns.TypeA, "192.0.2.51")
	e.g.Consistently(func() []string { return e.served("again.example.com", dns.TypeA) }).
		WithTimeout(time.Second).Should(ConsistOf("192.0.2.51"), "only the new record's data")
}

// TestDNSRecordOfEarlierReleaseLosesItsFinalizer: a DNSRecord admitted by
// an earlier release carries the finalizer; the controller strips it
// (once) and applies the record as any other, and a DELETE then removes
// the object at once.
func TestDNSRecordOfEarlierReleaseLosesItsFinalizer(t *testing.T) {
	e := newRecordEnv(t)
	old := newRecord("earlier", "earlier", "A", "192.0.2.60")
	old.Finalizers = []string{v1.DNSRecordFinalizer, "example.com/keep"}
	e.create(old)
	r := e.waitRecord("earlier", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
	e.g.Eventually(func() []string { return e.record("earlier").Finalizers }).Should(Equal([]string{"example.com/keep"}),
		"only the operator's own finalizer goes")
	e.waitServed("earlier.example.com", dns.TypeA, "192.0.2.60")
	// Another tool's finalizer holds the object: its data stays until
	// the object is really gone.
	testkit.Must(t, k8sClient.Delete(ctx, r))
	e.g.Consistently(func() []string { return e.served("earlier.example.com", dns.TypeA) }).
		WithTimeout(time.Second).Should(ConsistOf("192.0.2.60"), "the data of a record that still exists")
	r = e.record("earlier")
	r.Finalizers = nil
	testkit.Must(t, k8sClient.Update(ctx, r))
	e.waitServed("earlier.example.com", dns.TypeA)
}

func TestDNSRecordNeverTouchesForeignData(t *testing.T) {
	e := newRecordEnv(t)
	c, err := dnsclient.New(e.server.DNSAddr, &e.tsig, dnsclient.Options{Timeout: 5 * time.Second})
	testkit.Must(t, err)
	defer c.Close()
	testkit.Must(t, c.Update(ctx, "example.com", dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{
		Name: "legacy.example.com.", Type: dns.TypeA, TTL: 300, Values: []string{"192.0.2.7"},
	}}))

	e.create(newRecord("legacy", "legacy", "A", "192.0.2.8"))
	r := e.waitRecord("legacy", v1.ConditionConflict, metav1.ConditionTrue, v1.ReasonForeignData)
	if r.Status.LastRcode != "YXRRSET" || !strings.Contains(meta.FindStatusCondition(r.Status.Conditions, v1.ConditionConflict).Message, "adoptExisting") {
		t.Errorf("the conflict should carry BIND's rcode and the way out: %+v", r.Status)
	}
	e.waitServed("legacy.example.com", dns.TypeA, "192.0.2.7")

	// Deleting a record that never applied leaves the foreign data alone.
	testkit.Must(t, k8sClient.Delete(ctx, r))
	e.waitNoRecords("the conflicting record to go")
	if got := e.served("legacy.example.com", dns.TypeA); !slices.Equal(got, []string{"192.0.2.7"}) {
		t.Fatalf("foreign data was touched: %v", got)
	}

	adopt := newRecord("legacy2", "legacy", "A", "192.0.2.9")
	adopt.Spec.AdoptExisting = true
	e.create(adopt)
	e.waitRecord("legacy2", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
	e.waitServed("legacy.example.com", dns.TypeA, "192.0.2.9")
}

func TestDNSRecordConflictBetweenRecords(t *testing.T) {
	e := newRecordEnv(t)
	e.create(newRecord("first", "www", "A", "192.0.2.1"))
	e.waitRecord("first", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
	e.create(newRecord("second", "www", "A", "192.0.2.2"))
	r := e.waitRecord("second", v1.ConditionConflict, metav1.ConditionTrue, v1.ReasonClaimed)
	if !strings.Contains(meta.FindStatusCondition(r.Status.Conditions, v1.ConditionConflict).Message, `DNSRecord "first"`) {
		t.Errorf("the conflict should name the owner: %+v", r.Status.Conditions)
	}
	e.waitServed("www.example.com", dns.TypeA, "192.0.2.1")

	// Inline records of the BindZone own their names too.
	e.create(newRecord("inline", "inline", "A", "192.0.2.3"))
	e.waitRecord("inline", v1.ConditionConflict, metav1.ConditionTrue, v1.ReasonClaimed)

	// When the owner goes, the other takes over: no fight, no gap forever.
	testkit.Must(t, k8sClient.Delete(ctx, e.record("first")))
	e.waitRecord("second", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
	e.waitServed("www.example.com", dns.TypeA, "192.0.2.2")
}

func TestDNSRecordRefusedUpdateReported(t *testing.T) {
	e := newRecordEnv(t)
	rec := newRecord("nope", "host", "A", "192.0.2.5")
	rec.Spec.ZoneRef.Name = "locked"
	e.create(rec)
	r := e.waitRecord("nope", v1.ConditionReady, metav1.ConditionFalse, v1.ReasonUpdateRefused)
	if r.Status.LastRcode != "REFUSED" {
		t.Errorf("lastRcode = %q, want BIND's REFUSED", r.Status.LastRcode)
	}
	// The refusal of one record does not hold back another zone's records.
	e.create(newRecord("fine", "fine", "TXT", `"hello"`))
	e.waitRecord("fine", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
}

// Drift: data a record wrote and someone changed behind its back is
// restored at the next resync; other names are never touched.
func TestDNSRecordDriftRepaired(t *testing.T) {
	e := newRecordEnv(t)
	e.create(newRecord("drift", "drift", "A", "192.0.2.40"))
	e.waitRecord("drift", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
	e.waitServed("drift.example.com", dns.TypeA, "192.0.2.40")

	c, err := dnsclient.New(e.server.DNSAddr, &e.tsig, dnsclient.Options{Timeout: 5 * time.Second})
	testkit.Must(t, err)
	defer c.Close()
	for _, set := range []dnsclient.RRSet{
		{Name: "drift.example.com.", Type: dns.TypeA, TTL: 3600, Values: []string{"192.0.2.66"}},
		{Name: "bystander.example.com.", Type: dns.TypeA, TTL: 300, Values: []string{"192.0.2.67"}},
	} {
		testkit.Must(t, c.Update(ctx, "example.com", dnsclient.Change{Op: dnsclient.Upsert, Set: set}))
	}
	e.waitServed("drift.example.com", dns.TypeA, "192.0.2.40")
	if got := e.served("bystander.example.com", dns.TypeA); !slices.Equal(got, []string{"192.0.2.67"}) {
		t.Fatalf("data no record declared was touched: %v", got)
	}
}

// waitNoRecords waits until every DNSRecord of the namespace is gone
// (their DELETEs went through).
func (e *recordEnv) waitNoRecords(what string) {
	e.t.Helper()
	e.g.Eventually(func(g Gomega) []v1.DNSRecord {
		var l v1.DNSRecordList
		g.Expect(k8sClient.List(ctx, &l, client.InNamespace(e.ns))).To(Succeed())
		return l.Items
	}).Should(BeEmpty(), what)
}

// TestStatusPatchOfARecreatedRecord pins the real API server's answer that
// the DNSRecord controller's status write relies on: a JSON patch that
// tests /metadata/uid is refused, and told apart from any other invalid
// patch, when the object was deleted and created again under the same
// name (reconcileutil.IsUIDMismatch); the status of the first object never
// lands on the second.
func TestStatusPatchOfARecreatedRecord(t *testing.T) {
	f := keyNamespace(t)
	first := newRecord("again", "again", "A", "192.0.2.60")
	f.create(first)
	testkit.Must(t, k8sClient.Delete(ctx, first))
	f.g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, f.key("again"), &v1.DNSRecord{}))
	}).Should(BeTrue(), "the first DNSRecord is gone")
	second := newRecord("again", "again", "A", "192.0.2.61")
	f.create(second)

	statusOf := func(uid types.UID, status string) client.Patch {
		return client.RawPatch(types.JSONPatchType, []byte(fmt.Sprintf(
			`[{"op":"test","path":"/metadata/uid","value":%q},{"op":"add","path":"/status","value":%s}]`, uid, status)))
	}
	claim := `{"appliedValues":["192.0.2.60"]}`
	err := k8sClient.Status().Patch(ctx, second.DeepCopy(), statusOf(first.UID, claim))
	f.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the first object's status on the second: %v", err)
	f.g.Expect(reconcileutil.IsUIDMismatch(err)).To(BeTrue(), "%v", err)
	got := &v1.DNSRecord{}
	testkit.Must(t, k8sClient.Get(ctx, f.key("again"), got))
	f.g.Expect(got.Status.AppliedValues).NotTo(ContainElement("192.0.2.60"))

	// Another invalid status is not mistaken for a UID mismatch.
	err = k8sClient.Status().Patch(ctx, second.DeepCopy(), statusOf(second.UID, `{"appliedValues":"not a list"}`))
	f.g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	f.g.Expect(reconcileutil.IsUIDMismatch(err)).To(BeFalse(), "%v", err)
	// With its own UID the write lands.
	f.g.Expect(k8sClient.Status().Patch(ctx, second.DeepCopy(), statusOf(second.UID, `{"observedGeneration":1}`))).To(Succeed())
}
