// Command demo is `make demo`: it starts the local cluster (real etcd,
// kube-apiserver and kube-controller-manager; BIND pods as real named
// processes in their own network namespaces), runs the operator with its
// webhooks against it, applies config/samples, prints `kubectl get bind`
// and dig answers from the primary and the secondaries, and keeps running
// until interrupted.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/e2e"
	"git.unkin.net/unkin/bind-operator/test/envtestutil"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the demo runs BIND pods in network namespaces: run it as root")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	env, err := e2e.Start(ctx, e2e.Options{Logf: func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) }})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("\nstopping: pods, namespaces, interfaces and folders are removed ...")
		env.Stop()
	}()
	fmt.Printf("\nthe operator runs with its webhooks (log: %s)\n", env.OperatorLog)

	fmt.Println("\napplying config/samples through the admission webhooks")
	objs, err := env.ApplySamples(ctx, "default")
	if err != nil {
		return err
	}
	for _, o := range objs {
		fmt.Printf("  %s/%s created\n", strings.ToLower(o.GetKind()), o.GetName())
	}

	for _, c := range []struct {
		name     string
		replicas int32
	}{{"authoritative", 3}, {"resolver", 2}} {
		fmt.Printf("\nwaiting for BindCluster %s (%d BIND pods) to be ready ...\n", c.name, c.replicas)
		if err := waitReady(ctx, env, c.name, c.replicas); err != nil {
			return fmt.Errorf("%w (operator log: %s)", err, env.OperatorLog)
		}
	}

	// The clusters are ready before their zones and records are: adding
	// the samples' keys rolls the pods once, and the zones are added again
	// on the new primary. Show the settled state.
	fmt.Printf("\nwaiting for the zones and records to be served ...\n")
	if pending := waitServed(ctx, env, 2*time.Minute); len(pending) > 0 {
		fmt.Printf("  not ready after 2 minutes (see their status): %s\n", strings.Join(pending, ", "))
	}

	kubectl := filepath.Join(envtestutil.RepoRoot(), "bin", "k8s", "kubectl")
	show(ctx, "kubectl get bind", kubectl, "--kubeconfig", env.Cluster.KubeconfigPath(), "get", "bind", "-o", "wide")
	show(ctx, "kubectl get pods,svc", kubectl, "--kubeconfig", env.Cluster.KubeconfigPath(), "get", "pods,svc", "-o", "wide")

	for i, role := range []string{"primary", "secondary", "secondary"} {
		pod := fmt.Sprintf("authoritative-%d", i)
		ip, err := env.Cluster.PodIP(ctx, "default", pod)
		if err != nil {
			return err
		}
		fmt.Printf("\n$ dig @%s (the %s, %s)\n", ip, role, pod)
		for _, q := range [][]string{{"catalog.example.internal", "SOA"}, {"example.com", "SOA"}, {"www.example.com", "A"}} {
			fmt.Println("  " + digLine(ctx, ip, q[0], q[1]))
		}
	}

	fmt.Printf("\nThe cluster keeps running. Explore it:\n  export KUBECONFIG=%s\n  %s get bind\n  %s explain bindzone.spec.records\n", env.Cluster.KubeconfigPath(), kubectl, kubectl)
	fmt.Println("Press Ctrl-C to stop and clean up.")
	<-ctx.Done()
	return nil
}

func waitReady(ctx context.Context, env *e2e.Env, name string, replicas int32) error {
	var c v1.BindCluster
	err := wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &c); err != nil {
			return false, nil
		}
		return c.Status.ReadyReplicas == replicas && meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionReady), nil
	})
	if err != nil {
		return fmt.Errorf("BindCluster %s: %d of %d pods ready: %v", name, c.Status.ReadyReplicas, replicas, err)
	}
	return nil
}

// waitServed waits until every BindZone and DNSRecord of the samples is
// Ready, for at most limit, and returns those that are not.
func waitServed(ctx context.Context, env *e2e.Env, limit time.Duration) []string {
	var pending []string
	_ = wait.PollUntilContextTimeout(ctx, time.Second, limit, true, func(ctx context.Context) (bool, error) {
		pending = pending[:0]
		var zones v1.BindZoneList
		var recs v1.DNSRecordList
		if env.Client.List(ctx, &zones, client.InNamespace("default")) != nil || env.Client.List(ctx, &recs, client.InNamespace("default")) != nil {
			return false, nil
		}
		for _, z := range zones.Items {
			if !meta.IsStatusConditionTrue(z.Status.Conditions, v1.ConditionReady) {
				pending = append(pending, "bindzone/"+z.Name)
			}
		}
		for _, r := range recs.Items {
			if !meta.IsStatusConditionTrue(r.Status.Conditions, v1.ConditionReady) {
				pending = append(pending, "dnsrecord/"+r.Name)
			}
		}
		return len(pending) == 0, nil
	})
	return pending
}

// digLine runs the real dig and condenses its answer to one line: the
// records, or the status when there are none.
func digLine(ctx context.Context, server, name, qtype string) string {
	out, err := exec.CommandContext(ctx, "dig", "@"+server, name, qtype, "+norec", "+noall", "+answer", "+comments", "+time=2", "+tries=1").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%-26s %-4s dig: %v", name, qtype, err)
	}
	var answers []string
	status := "no answer"
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.Index(l, "status: "); i >= 0 {
			status = strings.TrimSuffix(strings.Fields(l[i+len("status: "):])[0], ",")
		} else if l != "" && !strings.HasPrefix(l, ";") {
			answers = append(answers, strings.Join(strings.Fields(l), " "))
		}
	}
	if len(answers) == 0 {
		return fmt.Sprintf("%-26s %-4s -> %s", name, qtype, status)
	}
	return strings.Join(answers, "\n  ")
}

func show(ctx context.Context, title, name string, args ...string) {
	fmt.Printf("\n$ %s\n", title)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	if err := cmd.Run(); err != nil {
		fmt.Printf("  (%s: %v)\n", name, err)
	}
}
