package cel

import (
	"testing"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// BenchmarkCreateDNSRecords is the API server's own cost of a small object
// (CRD schema and CEL rules, no webhook), 32 clients at once: the floor
// under test/webhooks' BenchmarkCreateDNSRecords.
func BenchmarkCreateDNSRecords(b *testing.B) {
	testkit.BenchCreateDNSRecords(b, k8sClient, newNamespace(b))
}
