package webhooks

import (
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestMetadataUpdatesSkipAdmission: a DNSRecord that its zone has since
// made invalid (the zone now declares the same name and type) can still be
// labelled and, once deleted, released by removing its finalizer: an
// update that leaves spec alone does not reach the webhooks
// (matchConditions), so nothing can hold a deleted object forever. A spec
// change is still judged against the zone. DNSRecords are created without
// a finalizer now; this one has the finalizer of an earlier release, set
// by the client as an object of that release has it until the controller
// strips it.
func TestMetadataUpdatesSkipAdmission(t *testing.T) {
	fixtures(t)
	zone := &v1alpha1.BindZone{ObjectMeta: meta("meta-zone"), Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("auth"), ZoneName: "meta.example.com", UpdateKeyRef: &v1alpha1.LocalObjectReference{Name: "xfr"},
		Records: []v1alpha1.RecordSet{{Name: "@", Type: "NS", Values: []string{"ns1.example.net."}}}}}
	if err := k8sClient.Create(ctx, zone); err != nil {
		t.Fatal(err)
	}
	rec := &v1alpha1.DNSRecord{ObjectMeta: meta("meta-rec"), Spec: v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "meta-zone"}, Name: "api", Type: "A", Values: []string{"192.0.2.1"}}}
	rec.Finalizers = []string{v1alpha1.DNSRecordFinalizer}
	if err := k8sClient.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.Finalizers, []string{v1alpha1.DNSRecordFinalizer}) {
		t.Fatalf("created DNSRecord has finalizers %v, want [%s]", rec.Finalizers, v1alpha1.DNSRecordFinalizer)
	}
	zone.Spec.Records = append(zone.Spec.Records, v1alpha1.RecordSet{Name: "api", Type: "A", Values: []string{"192.0.2.2"}})
	if err := k8sClient.Update(ctx, zone); err != nil {
		t.Fatal(err)
	}

	// A spec change is judged against the zone as it is now (the
	// webhooks' cache may lag the zone update a moment). Each attempt
	// writes a value the record does not hold yet: once one attempt is
	// admitted during that lag, repeating its value would leave spec
	// alone, skip the webhooks (matchConditions) and be admitted forever.
	var err error
	attempt := 0
	NewWithT(t).Eventually(func() error {
		attempt++
		changed := rec.DeepCopy()
		changed.Spec.Values = []string{fmt.Sprintf("192.0.2.%d", 2+attempt%250)}
		if err = k8sClient.Update(ctx, changed); err == nil {
			rec = changed
		}
		return err
	}).WithTimeout(10*time.Second).Should(HaveOccurred(), "a spec change of a DNSRecord its zone now declares is still admitted")
	expectInvalid(t, err, "spec.name", "already declared in BindZone")

	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
		t.Fatal(err)
	}
	rec.Labels = map[string]string{"team": "web"}
	if err := k8sClient.Update(ctx, rec); err != nil {
		t.Fatalf("a label-only update of a record its zone made invalid was refused: %v", err)
	}
	if err := k8sClient.Delete(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
		t.Fatal(err)
	}
	if rec.DeletionTimestamp == nil || !slices.Equal(rec.Finalizers, []string{v1alpha1.DNSRecordFinalizer}) {
		t.Fatalf("the deleted record is not held by its finalizer: deletionTimestamp %v, finalizers %v", rec.DeletionTimestamp, rec.Finalizers)
	}
	rec.Finalizers = nil
	if err := k8sClient.Update(ctx, rec); err != nil {
		t.Fatalf("removing the finalizer of a deleted record was refused, which would hold it forever: %v", err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rec), rec); !apierrors.IsNotFound(err) {
		t.Errorf("the released record is still there: %v", err)
	}
}
