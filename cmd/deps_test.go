package main

import (
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestBinaryLeavesOutServerStacks: every package linked into the binary
// runs its init at start and keeps its pages resident, so what the binary
// links is memory (issue 15, item 4). These modules came in once through
// controller-runtime's metrics filter (k8s.io/apiserver's authenticator
// and authorizer factories) and cost 16 MiB of binary and 12 MiB of
// resident memory; internal/metricsauth does that job without them.
func TestBinaryLeavesOutServerStacks(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, unwanted := range []string{
		"google.golang.org/grpc",
		"go.opentelemetry.io/otel/sdk/trace",
		"sigs.k8s.io/apiserver-network-proxy/konnectivity-client/pkg/client",
		"k8s.io/apiserver/pkg/authentication/authenticatorfactory",
		"k8s.io/apiserver/pkg/authorization/authorizerfactory",
	} {
		NewWithT(t).Expect(deps).NotTo(ContainElement(unwanted), "the manager's binary links %s again: see internal/metricsauth", unwanted)
	}
}
