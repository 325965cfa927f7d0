// Command demo is `make demo`: it starts a real one-node cluster
// (test/localcluster: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kube-proxy, a kubelet with containerd and a registry),
// builds the checkout as a release (its version from hack/version.sh, or
// VERSION), pushes its images to the registry and installs it exactly as
// the README tells a user (`helm install` of the chart package; the node
// pulls the images by tag), prints the version it runs, applies config/samples
// with kubectl, waits until the sample BindClusters are Ready, prints
// `kubectl get bind -A`, the pods and Services, and dig answers from every
// BIND pod and every query Service, and keeps running until interrupted.
// Then it removes everything and exits 0.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/e2e"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// namespace is where the samples go, as `kubectl apply -k config/samples`
// with the admin's default context puts them.
const namespace = "default"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	if os.Geteuid() != 0 {
		return errors.New("the demo runs a kubelet, containerd and kube-proxy: run it as root")
	}
	// The API server's warnings about applied objects reach the output.
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	env, err := e2e.Start(ctx, e2e.Options{
		Install: e2e.InstallHelm,
		Logf:    func(f string, a ...any) { fmt.Printf("  "+f+"\n", a...) },
	})
	if err != nil {
		if ctx.Err() != nil {
			fmt.Println("\ninterrupted while starting; everything started was removed")
			return nil
		}
		return err
	}
	defer func() {
		fmt.Println("\nstopping: pods, containers, network, cgroups and folders are removed ...")
		env.Stop()
		fmt.Println("done")
	}()
	err = demo(ctx, env)
	if ctx.Err() != nil {
		return nil // Ctrl-C
	}
	if err != nil {
		logCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		fmt.Fprintf(os.Stderr, "%s\noperator logs (tails):\n%s\n", env.DescribeOperator(logCtx), env.OperatorLogTails(logCtx, 6000))
		return err
	}
	return nil
}

func demo(ctx context.Context, env *e2e.Env) error {
	kubectl := filepath.Join(testkit.RepoRoot(), "bin", "k8s", "kubectl")
	fmt.Printf("\n$ helm install %s %s --namespace %s --create-namespace\n", e2e.HelmRelease, env.Release.Chart(), e2e.OperatorNamespace)
	fmt.Printf("the operator runs as Deployment %s/%s from %s (pulled from the local registry %s)\n", e2e.OperatorNamespace, e2e.OperatorDeployment, env.Release.OperatorImage(), localcluster.RegistryAddr)
	show(ctx, env, "-n", e2e.OperatorNamespace, "exec", "deploy/"+e2e.OperatorDeployment, "-c", "manager", "--", "/bind-operator", "version")

	fmt.Printf("\n$ kubectl apply -k config/samples -n %s\n", namespace)
	lines, err := env.ApplySamples(ctx, namespace)
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Println("  " + l)
	}

	var clusters v1.BindClusterList
	if err := env.Client.List(ctx, &clusters, client.InNamespace(namespace)); err != nil {
		return err
	}
	sort.Slice(clusters.Items, func(i, j int) bool { return clusters.Items[i].Name < clusters.Items[j].Name })
	for _, c := range clusters.Items {
		replicas := ptr.Deref(c.Spec.Replicas, 3)
		fmt.Printf("\nwaiting for BindCluster %s (%s, %d BIND pods) to be Ready ...\n", c.Name, c.Spec.Mode, replicas)
		if err := waitReady(ctx, env, c.Name, replicas); err != nil {
			return err
		}
	}
	// The clusters are Ready before every zone and record is: show the
	// settled state.
	fmt.Printf("\nwaiting for the zones and records to be served ...\n")
	if pending := waitServed(ctx, env, 3*time.Minute); len(pending) > 0 {
		fmt.Printf("  not Ready after 3 minutes (see their status): %s\n", strings.Join(pending, ", "))
	}

	// A resolver validates the forwarded zone against the DS its BindZone
	// publishes; right after the zone is first signed, a resolver pod may
	// still answer SERVFAIL from before.
	fmt.Printf("\nwaiting for the resolvers to answer what they forward ...\n")
	for _, c := range clusters.Items {
		if c.Spec.Mode != v1.ModeResolver {
			continue
		}
		if failing := waitAnswers(ctx, env, &c, 2*time.Minute); len(failing) > 0 {
			fmt.Printf("  still failing after 2 minutes: %s\n", strings.Join(failing, ", "))
		}
	}

	show(ctx, env, "get", "bind", "-A")
	show(ctx, env, "get", "pods,svc", "-n", namespace, "-o", "wide")

	for _, c := range clusters.Items {
		if err := digCluster(ctx, env, &c); err != nil {
			return err
		}
	}

	fmt.Printf("\nThe cluster keeps running. Explore it:\n  export KUBECONFIG=%s\n  %s get bind -A\n  %s explain bindzone.spec.records\n", env.Cluster.KubeconfigPath(), kubectl, kubectl)
	fmt.Printf("  %s logs -n %s deploy/%s\n", kubectl, e2e.OperatorNamespace, e2e.OperatorDeployment)
	fmt.Println("Pod IPs (198.18.0.0/16) and ClusterIPs (198.19.0.0/16) answer from this host.")
	fmt.Println("Press Ctrl-C to stop and clean up.")
	<-ctx.Done()
	return nil
}

func waitReady(ctx context.Context, env *e2e.Env, name string, replicas int32) error {
	var c v1.BindCluster
	err := wait.PollUntilContextTimeout(ctx, time.Second, 6*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &c); err != nil {
			return false, nil
		}
		return c.Status.ReadyReplicas == replicas && meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionReady), nil
	})
	if err != nil {
		var conds []string
		for _, cond := range c.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s (%s: %s)", cond.Type, cond.Status, cond.Reason, cond.Message))
		}
		msg := fmt.Sprintf("BindCluster %s: %d of %d pods ready, conditions %s: %v", name, c.Status.ReadyReplicas, replicas, strings.Join(conds, "; "), err)
		for i := range replicas {
			msg += "\n" + env.Cluster.DescribePod(ctx, namespace, fmt.Sprintf("%s-%d", name, i))
		}
		return errors.New(msg)
	}
	fmt.Printf("  %d/%d pods ready\n", c.Status.ReadyReplicas, replicas)
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
		if env.Client.List(ctx, &zones, client.InNamespace(namespace)) != nil || env.Client.List(ctx, &recs, client.InNamespace(namespace)) != nil {
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

// waitAnswers waits until every pod of a resolver cluster answers each of
// its forwarded questions without SERVFAIL, and returns what still fails
// after limit.
func waitAnswers(ctx context.Context, env *e2e.Env, c *v1.BindCluster, limit time.Duration) []string {
	var failing []string
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, limit, true, func(ctx context.Context) (bool, error) {
		failing = failing[:0]
		qs, _, err := questions(ctx, env, c)
		if err != nil {
			return false, nil
		}
		for i := range ptr.Deref(c.Spec.Replicas, 3) {
			pod := fmt.Sprintf("%s-%d", c.Name, i)
			ip, err := env.Cluster.PodIP(ctx, namespace, pod)
			if err != nil {
				failing = append(failing, pod)
				continue
			}
			for _, q := range qs {
				if !q.recurse || !q.dnssec {
					continue
				}
				m := new(dns.Msg)
				m.SetQuestion(q.name, q.qtype)
				m.SetEdns0(1232, true)
				if in, err := localcluster.Exchange("udp", ip, m); err != nil || in.Rcode == dns.RcodeServerFailure {
					failing = append(failing, pod+" "+q.name)
				}
			}
		}
		return len(failing) == 0, nil
	})
	return failing
}

// question is one dig query; recurse sets RD (a resolver's questions) and
// dnssec DO (so "ad" shows a validated answer; a stub resolver such as
// glibc's sets neither DO nor waits for DNSSEC, and RPZ rewrites for it
// without recursing first).
type question struct {
	name    string
	qtype   uint16
	class   uint16
	recurse bool
	dnssec  bool
}

// digCluster prints dig answers from each pod of the cluster (the primary,
// then the secondaries) and from its query Service.
func digCluster(ctx context.Context, env *e2e.Env, c *v1.BindCluster) error {
	qs, note, err := questions(ctx, env, c)
	if err != nil {
		return err
	}
	fmt.Printf("\n== BindCluster %s (%s) ==", c.Name, c.Spec.Mode)
	if note != "" {
		fmt.Printf("\n%s", note)
	}
	fmt.Println()
	replicas := ptr.Deref(c.Spec.Replicas, 3)
	for i := range replicas {
		pod := fmt.Sprintf("%s-%d", c.Name, i)
		role := "a secondary"
		if i == 0 {
			role = "the primary"
		}
		if c.Spec.Mode == v1.ModeResolver {
			role = "a resolver pod"
		}
		ip, err := env.Cluster.PodIP(ctx, namespace, pod)
		if err != nil {
			return err
		}
		printDig(ip, fmt.Sprintf("%s, %s", pod, role), qs)
	}
	svcIP, err := env.Cluster.ServiceIP(ctx, namespace, c.Name)
	if err != nil {
		return err
	}
	printDig(svcIP, fmt.Sprintf("Service %s, through kube-proxy", c.Name), qs)
	return nil
}

// questions picks what to ask a cluster: for an authoritative one, its
// catalog zones' and zones' SOA and their A records (inline and
// DNSRecords); for a resolver, which pod answers and a name the host's
// view cannot recurse for.
func questions(ctx context.Context, env *e2e.Env, c *v1.BindCluster) ([]question, string, error) {
	hostname := question{"hostname.bind.", dns.TypeTXT, dns.ClassCHAOS, false, false}
	var zones v1.BindZoneList
	var recs v1.DNSRecordList
	if err := env.Client.List(ctx, &zones, client.InNamespace(namespace)); err != nil {
		return nil, "", err
	}
	if err := env.Client.List(ctx, &recs, client.InNamespace(namespace)); err != nil {
		return nil, "", err
	}
	if c.Spec.Mode == v1.ModeResolver {
		// The Forward zones that name another cluster: what that cluster
		// serves, asked recursively (with DO: "ad" marks a validated answer).
		qs := []question{hostname}
		for _, z := range zones.Items {
			if z.Spec.ClusterRef.Name != c.Name || z.Spec.Type != v1.ZoneForward || len(z.Spec.Forwarders) == 0 || z.Spec.Forwarders[0].ClusterRef == nil {
				continue
			}
			for _, q := range zoneQuestions(z.Spec.Forwarders[0].ClusterRef.Name, string(z.Spec.ZoneName), zones.Items, recs.Items) {
				q.recurse, q.dnssec = true, true
				qs = append(qs, q)
			}
		}
		// And what its BindPolicies rewrite (a wildcard asked as "blocked.").
		var pols v1.BindPolicyList
		if err := env.Client.List(ctx, &pols, client.InNamespace(namespace)); err != nil {
			return nil, "", err
		}
		for _, p := range pols.Items {
			if p.Spec.ClusterRef.Name != c.Name {
				continue
			}
			for _, r := range p.Spec.Rules {
				if r.Trigger == "" || r.Trigger == v1.TriggerQName {
					qs = append(qs, question{dns.Fqdn(strings.Replace(r.Match, "*.", "blocked.", 1)), dns.TypeA, dns.ClassINET, true, false})
				}
			}
		}
		return qs, "(this host, 198.18.0.1, is in the sample's internal networks: the internal view, recursion on, example.com forwarded to the authoritative cluster, the firewall's rules applied)", nil
	}
	var qs []question
	var cats v1.BindCatalogZoneList
	if err := env.Client.List(ctx, &cats, client.InNamespace(namespace)); err != nil {
		return nil, "", err
	}
	for _, cat := range cats.Items {
		if cat.Spec.ClusterRef.Name == c.Name {
			qs = append(qs, question{dns.Fqdn(string(cat.Spec.ZoneName)), dns.TypeSOA, dns.ClassINET, false, false})
		}
	}
	for _, z := range zones.Items {
		if z.Spec.ClusterRef.Name == c.Name && z.Spec.Type != v1.ZoneForward {
			qs = append(qs, zoneQuestions(c.Name, string(z.Spec.ZoneName), zones.Items, recs.Items)...)
		}
	}
	return append(qs, hostname), "", nil
}

// zoneQuestions asks for a zone's SOA and the A records that cluster
// serves in it: inline ones and DNSRecords.
func zoneQuestions(cluster, zoneName string, zones []v1.BindZone, recs []v1.DNSRecord) []question {
	zone := dns.Fqdn(zoneName)
	qs := []question{{zone, dns.TypeSOA, dns.ClassINET, false, false}}
	var names []string
	for _, z := range zones {
		if z.Spec.ClusterRef.Name != cluster || string(z.Spec.ZoneName) != zoneName {
			continue
		}
		for _, r := range z.Spec.Records {
			if r.Type == "A" && r.Name != "@" && !slices.Contains(names, string(r.Name)) {
				names = append(names, string(r.Name))
			}
		}
		for _, r := range recs {
			if r.Spec.ZoneRef.Name == z.Name && r.Spec.Type == "A" {
				names = append(names, string(r.Spec.Name))
			}
		}
	}
	for _, n := range names {
		qs = append(qs, question{n + "." + zone, dns.TypeA, dns.ClassINET, false, false})
	}
	return qs
}

// printDig prints, dig-style, each answer from server.
func printDig(server, who string, qs []question) {
	fmt.Printf("\n$ dig @%s   (%s)\n", server, who)
	for _, q := range qs {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		m.Question[0].Qclass = q.class
		m.RecursionDesired = q.recurse
		if q.dnssec {
			m.SetEdns0(1232, true)
		}
		in, err := localcluster.Exchange("udp", server, m)
		label := fmt.Sprintf("%s %s", q.name, dns.TypeToString[q.qtype])
		if q.class != dns.ClassINET {
			label = fmt.Sprintf("%s %s %s", q.name, dns.ClassToString[q.class], dns.TypeToString[q.qtype])
		}
		switch {
		case err != nil:
			fmt.Printf("  ;; %s: %v\n", label, err)
		case len(in.Answer) == 0:
			fmt.Printf("  ;; %s: status %s, no answer\n", label, dns.RcodeToString[in.Rcode])
		default:
			if in.AuthenticatedData {
				fmt.Printf("  ;; %s: flags ad (DNSSEC-validated by the resolver)\n", label)
			}
			for _, rr := range in.Answer {
				if rr.Header().Rrtype != dns.TypeRRSIG {
					fmt.Printf("  %s\n", rr)
				}
			}
		}
	}
}

// show runs kubectl and prints its output under the command line.
func show(ctx context.Context, env *e2e.Env, args ...string) {
	fmt.Printf("\n$ kubectl %s\n", strings.Join(args, " "))
	out, err := env.Kubectl(ctx, "", args...)
	if err != nil {
		fmt.Printf("  (%v)\n", err)
		return
	}
	fmt.Print(out)
}
