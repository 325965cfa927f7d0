// Package certs tests the webhook certificate plumbing against a real
// kube-apiserver: the self-managed Manager (issue, inject, reuse, rotate,
// re-inject), certificate reload by controller-runtime's webhook server, and
// the cert-manager objects of config/certmanager against cert-manager's own
// CRD schemas.
package certs

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"git.unkin.net/unkin/bind-operator/test/envtestutil"
)

var (
	cfg       *rest.Config
	k8sClient client.WithWatch
	ctx       = context.Background()
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// logBuffer captures everything the code under test logs, at every
// verbosity, so a test can prove key material never reaches it.
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

func run(m *testing.M) int {
	logf.SetLogger(funcr.New(logBuffer.add, funcr.Options{Verbosity: 10}))
	env, err := envtestutil.NewEnvironment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmCRDs, err := certManagerCRDs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.CRDs = append(env.CRDs, cmCRDs...)
	cfg, err = env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-apiserver and etcd: %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	k8sClient, err = client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
