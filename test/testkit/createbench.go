package testkit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// BenchCreateDNSRecords creates b.N DNSRecords in ns from 32 goroutines,
// as a GitOps tool applying a large folder would,
// and reports and returns objects per second.
func BenchCreateDNSRecords(b *testing.B, c client.Client, ns string) float64 {
	zone := &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "authoritative"}, ZoneName: "example.com", Type: v1.ZonePrimary,
		Records: []v1.RecordSet{{Name: "@", Type: "NS", Values: []string{"ns1.example.net."}}},
	}}
	if err := c.Create(context.Background(), zone); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	before := ReadCPUTimes()
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
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "obj/s")
	// Where the time went: on a machine of two cores the API server, etcd
	// and this process (the client and, where installed, the webhook
	// server) share the CPU, so what each spends per object bounds the rate.
	used := ReadCPUTimes().Sub(before)
	perObject := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(perObject(used.APIServer), "apiserver-cpu-ms/obj")
	b.ReportMetric(perObject(used.Etcd), "etcd-cpu-ms/obj")
	b.ReportMetric(perObject(used.Self), "self-cpu-ms/obj")
	return rate
}
