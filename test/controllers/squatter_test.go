package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestSquatterDoesNotBlockTheZoneOwner is issue 44's squatting scene: a
// tenant of namespace B applies a DNSRecord for zone prod of namespace A
// before that zone exists (the webhook admits it with a warning; this
// suite has no webhook). A then creates the zone, admitting no other
// namespace, and its own www A. The owner's record, although younger, is
// applied and served; the squatter's reports NotAdmitted and claims
// nothing. (That it is in no owned set for the agent is
// TestOwnedSetsOnlyOfAdmittedRecords in package dnsrecords: this suite
// runs no BindZone reconciler.)
func TestSquatterDoesNotBlockTheZoneOwner(t *testing.T) {
	owner := keyNamespace(t)
	squatterNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("squat-%d", seq.Add(1))}}
	testkit.Must(t, k8sClient.Create(ctx, squatterNS))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, squatterNS) })
	squatter := &fixture{t: t, g: NewWithT(t), ns: squatterNS.Name}

	// The squatter comes first: the zone does not exist yet.
	squatter.create(&v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "grab"}, Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Namespace: owner.ns, Name: "prod"}, Name: "www", Type: "A", Values: []string{"192.0.2.66"},
	}})
	squatterEnv := &recordEnv{fixture: squatter}
	squatterEnv.waitRecord("grab", v1.ConditionReady, metav1.ConditionFalse, v1.ReasonZoneNotFound)

	// Then the zone, on a real named, and the owner's own record.
	tsig := bindtest.NewKey("upd", "hmac-sha256")
	srv := bindtest.Start(t, bindtest.Options{
		Keys:   []bindtest.Key{tsig},
		Files:  map[string]string{"prod.example.db": bindtest.SeedZone("prod.example.", 1)},
		Config: `zone "prod.example" { type primary; file "prod.example.db"; allow-update { key "upd"; }; };`,
	})
	key, err := dnsclient.NewKey(tsig.Name, tsig.Algorithm, tsig.Secret)
	testkit.Must(t, err)
	resolver.set(owner.ns, "prod.example", srv.DNSAddr, key)
	owner.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "upd-key"}, Data: map[string][]byte{v1.TSIGSecretKey: []byte(tsig.Secret)}})
	owner.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "upd"}, Spec: v1.BindTSIGKeySpec{ImportExisting: true, SecretName: "upd-key"}})
	owner.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: "prod.example",
		UpdateKeyRef: &v1.LocalObjectReference{Name: "upd"},
	}})
	squatterEnv.waitRecord("grab", v1.ConditionReady, metav1.ConditionFalse, v1.ReasonNotAdmitted)

	ownerEnv := &recordEnv{fixture: owner, server: srv, tsig: key}
	owner.create(&v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "www"}, Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Name: "prod"}, Name: "www", Type: "A", Values: []string{"192.0.2.10"},
	}})
	r := ownerEnv.waitRecord("www", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
	if c := meta.FindStatusCondition(r.Status.Conditions, v1.ConditionConflict); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("the owner's record reports a conflict: %+v", c)
	}
	ownerEnv.waitServed("www.prod.example", dns.TypeA, "192.0.2.10")

	// The squatter stays out: NotAdmitted, nothing written, and its
	// message says what the zone admits without naming the owner's
	// records.
	grab := squatterEnv.waitRecord("grab", v1.ConditionReady, metav1.ConditionFalse, v1.ReasonNotAdmitted)
	if len(grab.Status.AppliedValues) != 0 {
		t.Errorf("the squatter wrote %v", grab.Status.AppliedValues)
	}
	if c := meta.FindStatusCondition(grab.Status.Conditions, v1.ConditionReady); strings.Contains(c.Message, `"www"`) {
		t.Errorf("the squatter's message names the owner's record: %s", c.Message)
	}
	squatter.g.Consistently(func() []string { return ownerEnv.served("www.prod.example", dns.TypeA) }).
		WithTimeout(5*time.Second).Should(ConsistOf("192.0.2.10"), "the owner's data stays")
	var still v1.DNSRecord
	testkit.Must(t, k8sClient.Get(ctx, client.ObjectKeyFromObject(r), &still))
	if c := meta.FindStatusCondition(still.Status.Conditions, v1.ConditionReady); c == nil || c.Reason != v1.ReasonApplied {
		t.Errorf("the owner's record lost Ready: %+v", still.Status.Conditions)
	}
}
