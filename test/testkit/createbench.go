package testkit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// BenchCreateDNSRecords creates b.N DNSRecords in ns from 32 goroutines,
// as a GitOps tool applying a large folder would,
// and reports objects per second.
func BenchCreateDNSRecords(b *testing.B, c client.Client, ns string) {
	zone := &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "authoritative"}, ZoneName: "example.com", Type: v1.ZonePrimary,
		Records: []v1.RecordSet{{Name: "@", Type: "NS", Values: []string{"ns1.example.net."}}},
	}}
	if err := c.Create(context.Background(), zone); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				r := &v1.DNSRecord{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("r%05d", i)},
					Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: "zone"}, Name: v1.RecordName(fmt.Sprintf("r%05d", i)), Type: "A",
						TTL: ptr.To[v1.TTL](60), Values: []string{"192.0.2.1"}},
				}
				if err := c.Create(context.Background(), r); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "obj/s")
}
