package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// The release lifecycle a platform team goes through (issue 43 item 6),
// on the samples, with queries flowing through both sample clusters' query
// Services at 50 per second:
//
//  1. Upgrade. The checkout, built again as the next version B (the same
//     code: the binary and both images differ by their version), is
//     installed over the running release A with `helm upgrade`. Every BIND
//     cluster rolls exactly once, onto B's BIND and agent images, and no
//     query fails; no object of the API changes (no generation moves).
//  2. Re-applying B rolls nothing.
//  3. `helm uninstall` keeps the CRDs, every object and the BIND pods,
//     which keep answering for 60 s with the operator gone.
//  4. Installing B again, this time from its install files with `kubectl
//     apply --server-side -f crds.yaml -f install.yaml`, adopts the running
//     clusters without rolling a pod.
//
// It is not parallel: it replaces the operator the other tests share,
// which go on with B installed from its install files.
func TestReleaseUpgradeUninstallReinstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	if env.Installed != InstallHelm {
		t.Fatalf("the operator was installed with %s, want helm: this test upgrades a Helm release", env.Installed)
	}
	a := env.Release
	began := time.Now()
	b, err := BuildRelease(ctx, t.Logf, nextVersion(a.Version), localcluster.RegistryAddr)
	testkit.Must(t, err)
	t.Logf("release B %s built and pushed to the cluster's registry in %s", b.Version, time.Since(began).Round(100*time.Millisecond))

	ns := newNamespace(ctx, t, "e2e-release")
	t.Cleanup(func() { dumpOnFailure(t, ns, "authoritative", 3) })
	_, err = env.ApplySamples(ctx, ns)
	testkit.Must(t, err)
	authIP, err := env.Cluster.ServiceIP(ctx, ns, "authoritative")
	testkit.Must(t, err)
	resolverIP, err := env.Cluster.ServiceIP(ctx, ns, "resolver")
	testkit.Must(t, err)
	clusters := []*lifecycleCluster{
		{ns: ns, name: "authoritative", replicas: 3, probe: soaProbe(authIP, "example.com.")},
		// The resolver forwards example.com to the authoritative cluster's
		// query Service: it answers through both clusters' rolls.
		{ns: ns, name: "resolver", replicas: 2, probe: resolverProbe(resolverIP, "mail.example.com.", "192.0.2.25")},
	}
	for _, c := range clusters {
		waitClusterReady(ctx, t, ns, c.name, c.replicas)
		NewWithT(t).Eventually(c.probe).WithArguments(false).WithContext(ctx).WithTimeout(4*time.Minute).Should(Succeed(), "%s's query Service answers", c.name)
		c.wantImages(ctx, t, a, "release A installed")
	}
	generations := apiGenerations(ctx, t)

	// 1. A → B with helm upgrade: exactly one roll each, onto B's images.
	for _, c := range clusters {
		c.watch(ctx, t)
	}
	testkit.Must(t, env.InstallRelease(ctx, b, InstallHelm))
	for _, c := range clusters {
		c.rolledOnceOnto(ctx, t, b, "helm upgrade to B")
	}
	if after := apiGenerations(ctx, t); !slicesEqual(after, generations) {
		t.Errorf("the upgrade changed objects of the API (kind/namespace/name=generation):\nbefore %v\nafter  %v", generations, after)
	}

	// 2. B again: nothing rolls.
	for _, c := range clusters {
		c.watch(ctx, t)
	}
	testkit.Must(t, env.InstallRelease(ctx, b, InstallHelm))
	noneRolled(ctx, t, clusters, 20*time.Second, "helm upgrade to B again")

	// 3. helm uninstall: the CRDs, the objects and the pods stay, and the
	// pods keep answering with no operator for 60 s.
	for _, c := range clusters {
		c.watch(ctx, t)
	}
	testkit.Must(t, env.Uninstall(ctx))
	NewWithT(t).Eventually(func() ([]string, error) {
		pods, err := env.OperatorPods(ctx)
		var names []string
		for _, p := range pods {
			names = append(names, p.Name)
		}
		return names, err
	}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeEmpty(), "the operator's pods go with helm uninstall")
	crds := &unstructured.UnstructuredList{}
	crds.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	testkit.Must(t, env.Client.List(ctx, crds))
	var ours []string
	for _, crd := range crds.Items {
		if group, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); group == v1.GroupVersion.Group {
			ours = append(ours, crd.GetName())
		}
	}
	if len(ours) != len(lifecycleKinds) {
		t.Errorf("after helm uninstall %d CRDs of %s are left (%v), want %d: uninstall must keep them", len(ours), v1.GroupVersion.Group, ours, len(lifecycleKinds))
	}
	if after := apiGenerations(ctx, t); !slicesEqual(after, generations) {
		t.Errorf("helm uninstall changed or removed objects of the API:\nbefore %v\nafter  %v", generations, after)
	}
	noneRolled(ctx, t, clusters, 60*time.Second, "60 s with the operator uninstalled")

	// 4. B from its install files: the clusters are adopted, nothing rolls.
	for _, c := range clusters {
		c.watch(ctx, t)
	}
	testkit.Must(t, env.InstallRelease(ctx, b, InstallManifests))
	for _, c := range clusters {
		waitClusterReady(ctx, t, ns, c.name, c.replicas)
	}
	noneRolled(ctx, t, clusters, 20*time.Second, "kubectl apply -f install.yaml of B after the uninstall")
	for _, c := range clusters {
		c.wantImages(ctx, t, b, "B reinstalled")
	}
	if after := apiGenerations(ctx, t); !slicesEqual(after, generations) {
		t.Errorf("the reinstall changed objects of the API:\nbefore %v\nafter  %v", generations, after)
	}
	t.Logf("release lifecycle A %s → B %s → B → uninstalled → B from install.yaml in %s", a.Version, b.Version, time.Since(began).Round(time.Second))
}

// nextVersion is the version the upgrade test builds the checkout as: a
// pre-release identifier more (still SemVer, still a valid image tag).
func nextVersion(v string) string {
	if strings.Contains(v, "-") {
		return v + ".next"
	}
	return v + "-next"
}

// lifecycleKinds are the kinds of the API; their CRDs outlive the operator.
var lifecycleKinds = []string{"BindACL", "BindCatalogZone", "BindCluster", "BindDNSSECPolicy", "BindPolicy", "BindTSIGKey", "BindView", "BindZone", "DNSRecord"}

// apiGenerations lists every object of the API in the cluster as
// kind/namespace/name=generation, sorted: a spec change moves a generation.
func apiGenerations(ctx context.Context, t *testing.T) []string {
	t.Helper()
	var out []string
	for _, kind := range lifecycleKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: v1.GroupVersion.Group, Version: v1.GroupVersion.Version, Kind: kind + "List"})
		testkit.Must(t, env.Client.List(ctx, list))
		for _, o := range list.Items {
			out = append(out, fmt.Sprintf("%s/%s/%s=%d", kind, o.GetNamespace(), o.GetName(), o.GetGeneration()))
		}
	}
	sort.Strings(out)
	return out
}

func slicesEqual(a, b []string) bool { return slices.Equal(a, b) }

// resolverProbe wants a recursive answer holding address for name.
func resolverProbe(server, name, address string) dnsProbe {
	return func(tcp bool) error {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		network := "udp"
		if tcp {
			network = "tcp"
		}
		in, err := localcluster.ExchangeFrom(netip.Addr{}, network, server, m)
		if err != nil {
			return err
		}
		if in.Rcode != dns.RcodeSuccess || !slices.Contains(aValues(in), address) {
			return fmt.Errorf("rcode %s, answer %v", dns.RcodeToString[in.Rcode], in.Answer)
		}
		return nil
	}
}

// lifecycleCluster follows one sample cluster through a step: its
// StatefulSet and pods before, every UID its pods have had since, and a
// query loop of at least 50 queries per second against its query Service
// (one every 15 ms; a slow answer holds the next one back).
type lifecycleCluster struct {
	ns, name string
	replicas int32
	probe    dnsProbe

	before  rollout
	pods    map[string]podState
	seen    func() map[string][]types.UID
	results chan queryStats
	stop    func()
	start   time.Time
}

func (c *lifecycleCluster) watch(ctx context.Context, t *testing.T) {
	t.Helper()
	var err error
	c.before, _, err = currentRollout(ctx, c.ns, c.name)
	testkit.Must(t, err)
	c.pods, err = podStates(ctx, c.ns, c.name)
	testkit.Must(t, err)
	if len(c.pods) != int(c.replicas) {
		t.Fatalf("%s: want %d pods before the step, got %s", c.name, c.replicas, describePods(c.pods))
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	c.seen = watchPodUIDs(watchCtx, t, c.ns, c.name)
	loopCtx, stopLoop := context.WithCancel(ctx)
	c.results = make(chan queryStats, 1)
	go func() { c.results <- probeLoop(loopCtx, c.probe, 15*time.Millisecond, 40000, 8*time.Minute) }()
	c.stop = func() { stopLoop(); stopWatch() }
	c.start = time.Now()
}

// queries stops the watch and the loop, and checks the loop: no failed
// query, at least 50 per second.
func (c *lifecycleCluster) queries(t *testing.T, what string) queryStats {
	t.Helper()
	c.stop()
	stats := <-c.results
	if stats.failed > 0 {
		t.Errorf("%s: %s: %d of %d queries to the query Service failed (even after one TCP retry): %v", c.name, what, stats.failed, stats.sent, stats.errors)
	}
	if rate := float64(stats.sent) / stats.elapsed.Seconds(); rate < 50 {
		t.Errorf("%s: %s: the query loop sent %.1f queries/s, want at least 50", c.name, what, rate)
	}
	return stats
}

// rolledOnceOnto waits until the cluster has rolled onto r's images and
// checks it rolled exactly once: every pod replaced once, the
// StatefulSet's generation up by one, the config unchanged.
func (c *lifecycleCluster) rolledOnceOnto(ctx context.Context, t *testing.T, r Release, what string) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		_, s, err := currentRollout(ctx, c.ns, c.name)
		if err != nil {
			return err
		}
		st := fmt.Sprintf("generation %d (observed %d), images %v, updated %d, ready %d, revisions %s/%s", s.Generation, s.Status.ObservedGeneration,
			templateImages(s.Spec.Template.Spec.Containers), s.Status.UpdatedReplicas, s.Status.ReadyReplicas, s.Status.CurrentRevision, s.Status.UpdateRevision)
		if !slices.Equal(templateImages(s.Spec.Template.Spec.Containers), releaseImages(r)) ||
			s.Status.ObservedGeneration != s.Generation || s.Status.UpdatedReplicas != c.replicas ||
			s.Status.ReadyReplicas != c.replicas || s.Status.CurrentRevision != s.Status.UpdateRevision {
			return fmt.Errorf("%s", st)
		}
		cur, err := podStates(ctx, c.ns, c.name)
		if err != nil {
			return err
		}
		for name, p := range cur {
			if p.UID == c.pods[name].UID {
				return fmt.Errorf("%s; %s not replaced yet", st, name)
			}
		}
		return nil
	}).WithContext(ctx).WithTimeout(6*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "%s: %s: the roll onto %s did not complete", c.name, what, r.Version)
	rolled := time.Since(c.start)
	waitClusterReady(ctx, t, c.ns, c.name, c.replicas)
	// Hold on a little: a second roll would start right after the first.
	NewWithT(t).Consistently(func() (int64, error) {
		_, s, err := currentRollout(ctx, c.ns, c.name)
		if err != nil {
			return 0, err
		}
		return s.Generation, nil
	}).WithContext(ctx).WithTimeout(8*time.Second).Should(Equal(c.before.Generation+1), "%s: %s: a second roll followed the first", c.name, what)
	stats := c.queries(t, what)
	after, _, err := currentRollout(ctx, c.ns, c.name)
	testkit.Must(t, err)
	if after.Generation != c.before.Generation+1 {
		t.Errorf("%s: %s: StatefulSet generation %d -> %d, want exactly +1 (one roll)", c.name, what, c.before.Generation, after.Generation)
	}
	if after.Hash != c.before.Hash {
		t.Errorf("%s: %s: the config hash moved (%s -> %s): only the images should have", c.name, what, shortHash(c.before.Hash), shortHash(after.Hash))
	}
	c.onePerPod(t, what, 2)
	c.wantImages(ctx, t, r, what)
	t.Logf("%s: %s: one roll in %s (generation %d -> %d); query Service: %s", c.name, what, rolled.Round(time.Millisecond), c.before.Generation, after.Generation, stats)
}

// noneRolled watches the clusters together for hold and checks that no
// pod was replaced, no StatefulSet changed, and every query was answered.
func noneRolled(ctx context.Context, t *testing.T, clusters []*lifecycleCluster, hold time.Duration, what string) {
	t.Helper()
	NewWithT(t).Consistently(func() error {
		for _, c := range clusters {
			r, _, err := currentRollout(ctx, c.ns, c.name)
			if err != nil {
				return err
			}
			if r != c.before {
				return fmt.Errorf("%s: the StatefulSet changed: generation %d -> %d, hash %s -> %s", c.name, c.before.Generation, r.Generation, shortHash(c.before.Hash), shortHash(r.Hash))
			}
		}
		return nil
	}).WithContext(ctx).WithTimeout(hold).WithPolling(time.Second).Should(Succeed(), "%s", what)
	for _, c := range clusters {
		stats := c.queries(t, what)
		c.onePerPod(t, what, 1)
		t.Logf("%s: %s: no pod replaced; query Service: %s", c.name, what, stats)
	}
}

// onePerPod checks every pod had exactly n incarnations during the step.
func (c *lifecycleCluster) onePerPod(t *testing.T, what string, n int) {
	t.Helper()
	uids := c.seen()
	for name, p := range c.pods {
		if got := uids[name]; len(got) != n || got[0] != p.UID {
			t.Errorf("%s: %s: pod %s had incarnations %v, want %d starting with %s", c.name, what, name, got, n, p.UID)
		}
	}
}

// wantImages checks the cluster runs r's images and says so in its status.
func (c *lifecycleCluster) wantImages(ctx context.Context, t *testing.T, r Release, what string) {
	t.Helper()
	_, s, err := currentRollout(ctx, c.ns, c.name)
	testkit.Must(t, err)
	if got, want := templateImages(s.Spec.Template.Spec.Containers), releaseImages(r); !slices.Equal(got, want) {
		t.Errorf("%s: %s: the pods run %v, want release %s's %v", c.name, what, got, r.Version, want)
	}
	NewWithT(t).Eventually(func() ([]string, error) {
		var bc v1.BindCluster
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: c.name}, &bc)
		return []string{bc.Status.AgentImage, bc.Status.Image}, err
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal([]string{r.OperatorImage(), r.BindImage()}), "%s: %s: status.agentImage and status.image", c.name, what)
}

// releaseImages are a release's agent and BIND images, sorted.
func releaseImages(r Release) []string {
	out := []string{r.OperatorImage(), r.BindImage()}
	sort.Strings(out)
	return out
}

// templateImages are the images of a pod template's containers, sorted.
func templateImages(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Image)
	}
	sort.Strings(out)
	return out
}
