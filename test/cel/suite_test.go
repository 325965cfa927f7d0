// Package cel tests the CRDs' structural schemas and CEL rules against a
// real kube-apiserver, with no webhook installed: everything rejected here is
// rejected by the API server itself.
package cel

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

var (
	k8sClient client.Client
	ctx       = context.Background()
)

func TestMain(m *testing.M) {
	testkit.Main(m, testkit.Options{Benchmarks: true}, func(s *testkit.Suite) error {
		k8sClient = s.Client
		return nil
	})
}
