// Package certs tests the webhook certificate plumbing against a real
// kube-apiserver: the self-managed Manager (issue, inject, reuse, rotate,
// re-inject), certificate reload by controller-runtime's webhook server, and
// the cert-manager objects of config/certmanager against cert-manager's own
// CRD schemas.
package certs

import (
	"context"
	"strings"
	"sync"
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

var (
	k8sClient client.WithWatch
	ctx       = context.Background()
)

func TestMain(m *testing.M) {
	// Everything the code under test logs, at every verbosity, is kept so a
	// test can prove key material never reaches it.
	logger := funcr.New(logBuffer.add, funcr.Options{Verbosity: 10})
	crds, err := certManagerCRDs()
	testkit.Main(m, testkit.Options{CRDs: crds, AddToScheme: cmv1.AddToScheme, Logger: &logger}, func(s *testkit.Suite) error {
		k8sClient = s.Client
		return err
	})
}

// logBuffer captures what the code under test logs.
var logBuffer lockedBuilder

type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(prefix + " " + args + "\n")
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
