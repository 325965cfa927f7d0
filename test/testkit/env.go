// Package testkit is what the test suites share: a real kube-apiserver and
// etcd with the project's CRDs (the binaries are built from the Go module
// proxy by `make envtest`, hack/build-k8s-binaries.sh, into bin/k8s), a
// TestMain that runs a package's tests against one (Main), managers with
// reconcilers on top (StartManager), and the small helpers every suite
// needs (Must, FreePort, ReadObjects). Assertions that wait use gomega's
// Eventually and Consistently; Main bounds them.
package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// ServiceCIDR is the API server's Service ClusterIP range in every suite.
const ServiceCIDR = "198.19.0.0/16"

// RepoRoot is the repository's top folder, found from this source file.
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Scheme holds the built-in kinds and the bind.unkin.net kinds.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := bindv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// NewEnvironment returns an envtest environment that installs the CRDs from
// config/crd/bases and uses the binaries in bin/k8s unless
// KUBEBUILDER_ASSETS points elsewhere. It fails with a clear message when the
// binaries have not been built.
func NewEnvironment() (*envtest.Environment, error) {
	root := RepoRoot()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make envtest` to build it from the Go module proxy", b, assets)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                Scheme(),
	}
	// ClusterIPs come from the benchmarking range (docs/testing.md, "Network
	// rules"), so nothing a test might send to a Service address can leave
	// the machine's test hosts.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", ServiceCIDR)
	return env, nil
}
