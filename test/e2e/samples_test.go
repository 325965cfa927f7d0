package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/envtestutil"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
)

// TestSamples applies config/samples to a real local cluster with the
// operator and its webhooks, and checks what a user would: every BIND pod of
// the authoritative cluster becomes ready and serves the catalog zone (the
// secondaries through a keyed transfer from the primary Service), and a
// broken object applied with kubectl is refused with the webhook's message.
func TestSamples(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the end-to-end tests run pods in network namespaces and need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	env, err := Start(ctx, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	defer func() {
		if t.Failed() {
			t.Logf("operator log (tail):\n%s", env.OperatorLogTail(6000))
		}
	}()

	if _, err := env.ApplySamples(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	waitClusterReady(ctx, t, env, "authoritative", 3)

	var cluster v1.BindCluster
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "authoritative"}, &cluster))
	var primarySvc corev1.Service
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "authoritative-primary"}, &primarySvc))
	if cluster.Status.PrimaryAddress != primarySvc.Spec.ClusterIP {
		t.Errorf("primaryAddress = %q, want the primary Service ClusterIP %q", cluster.Status.PrimaryAddress, primarySvc.Spec.ClusterIP)
	}

	// The catalog zone is config-level: the primary loads it from its seed,
	// each secondary transfers it, keyed, from the primary Service.
	servers := map[string]string{}
	for i := range 3 {
		name := fmt.Sprintf("authoritative-%d", i)
		ip, err := env.Cluster.PodIP(ctx, "default", name)
		must(t, err)
		servers[name] = ip
	}
	queryIP, err := env.Cluster.ServiceIP(ctx, "default", "authoritative")
	must(t, err)
	servers["query Service"] = queryIP
	for name, ip := range servers {
		waitSOA(ctx, t, ip, "catalog.example.internal.", name)
	}

	// A broken object is refused by the webhook, through a real kubectl.
	kubectl := filepath.Join(envtestutil.RepoRoot(), "bin", "k8s", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl not built: run hack/build-k8s-binaries.sh bin/k8s kubectl")
	}
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", env.Cluster.KubeconfigPath(), "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(`apiVersion: bind.unkin.net/v1alpha1
kind: BindCluster
metadata: {name: sneaky, namespace: default}
spec:
  extraOptions: ['also-notify { 198.18.0.42; };']
`)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "spec.extraOptions[0]") || !strings.Contains(string(out), "key") {
		t.Fatalf("kubectl apply of a pod-IP option should be refused by the webhook with a field path and the keyed alternative; got err=%v:\n%s", err, out)
	}
	t.Logf("kubectl refused the broken object:\n%s", out)
}

func waitClusterReady(ctx context.Context, t *testing.T, env *Env, name string, replicas int32) {
	t.Helper()
	var c v1.BindCluster
	err := wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &c); err != nil {
			return false, nil
		}
		return c.Status.ReadyReplicas == replicas && meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionReady), nil
	})
	if err != nil {
		t.Fatalf("BindCluster %s not ready (%d/%d, conditions %+v): %v", name, c.Status.ReadyReplicas, replicas, c.Status.Conditions, err)
	}
}

func waitSOA(ctx context.Context, t *testing.T, server, zone, who string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		in, err := localcluster.Dig(server, zone, dns.TypeSOA)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = dns.RcodeToString[in.Rcode]
		return in.Rcode == dns.RcodeSuccess && len(in.Answer) == 1 && in.Authoritative, nil
	})
	if err != nil {
		t.Fatalf("%s (%s) does not serve %s: last answer %s", who, server, zone, last)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
