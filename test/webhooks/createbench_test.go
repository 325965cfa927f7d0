package webhooks

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// BenchmarkCreateDNSRecords is BenchmarkCreateDNSRecords of test/cel with
// the mutating and validating webhooks in the path: run both packages in
// one `go test -bench CreateDNSRecords` to see what admission adds.
func BenchmarkCreateDNSRecords(b *testing.B) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = k8sClient.Delete(ctx, ns) })
	testkit.BenchCreateDNSRecords(b, k8sClient, ns.Name)
}
