package cel

import (
	"fmt"
	"testing"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// BenchmarkCreateZone1000 is the API server's own cost (schema, CEL rules,
// etcd write) of a BindZone with 1,000 record sets, no webhook involved: the
// baseline the admission webhooks' added latency is compared with
// (webhooks.BenchmarkZoneAdmission1000 measures the same object).
func BenchmarkCreateZone1000(b *testing.B) {
	ns := newNamespace(b)
	zone := baseZone()
	zone.Spec.Records = make([]v1.RecordSet, 1000)
	for i := range zone.Spec.Records {
		zone.Spec.Records[i] = v1.RecordSet{Name: v1.RecordName(fmt.Sprintf("host-%04d", i)), Type: "A", Values: []string{fmt.Sprintf("192.0.2.%d", i%250+1)}}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		z := zone.DeepCopy()
		z.Namespace, z.Name = ns, fmt.Sprintf("bench-%d", i)
		if err := k8sClient.Create(ctx, z); err != nil {
			b.Fatal(err)
		}
	}
}
