package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestPrimaryPodDeleted (issue 6 c): deleting the primary pod brings it back
// with a new IP and nothing else moves. The StatefulSet is not rolled
// (pod-template hash and generation unchanged) and the other pods are
// neither restarted nor recreated over a 60 s window; the secondaries keep
// serving the catalog zone while the primary is away and afterwards still
// transfer from the primary Service (a signed serial bump on the new
// primary reaches every secondary); the records of a BindZone and a
// DNSRecord survive on the primary's volume and on the secondaries, and a
// record added after the restart reaches every pod.
func TestPrimaryPodDeleted(t *testing.T) {
	t.Parallel()
	const window = 60 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-primary")
	a := authoritative{Namespace: ns, Name: "survivor", Replicas: 3, Catalog: "catalog.survivor.internal", Storage: true}
	a.create(ctx, t)
	const zone = "primary.e2e.example"
	testkit.Must(t, env.Client.Create(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "updates"}}))
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("zone", zone, "updates", v1.RecordSet{Name: "www", Type: "A", Values: []string{"192.0.2.10"}})))
	record := func(name, ip string) *v1.DNSRecord {
		return &v1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: "zone"}, Name: v1.RecordName(name), Type: "A",
				TTL: ptr.To[v1.TTL](60), Values: []string{ip}},
		}
	}
	testkit.Must(t, env.Client.Create(ctx, record("api", "192.0.2.80")))
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })

	ips := a.servedByAll(ctx, t, a.Catalog)
	zoneStart := time.Now()
	for i, ip := range ips {
		waitA(ctx, t, ip, "api."+zone, "192.0.2.80", fmt.Sprintf("%s-%d", a.Name, i))
		waitA(ctx, t, ip, "www."+zone, "192.0.2.10", fmt.Sprintf("%s-%d", a.Name, i))
	}
	t.Logf("BindZone record and DNSRecord served by all %d pods (%s after the catalog was)", a.Replicas, time.Since(zoneStart).Round(time.Millisecond))

	before, _, err := currentRollout(ctx, ns, a.Name)
	testkit.Must(t, err)
	pods, err := podStates(ctx, ns, a.Name)
	testkit.Must(t, err)
	var bc v1.BindCluster
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Name}, &bc))
	primaryName := a.Name + "-0"
	old := pods[primaryName]
	t.Logf("before: generation %d, hash %s, pods %s", before.Generation, shortHash(before.Hash), describePods(pods))

	// Watch everything for the whole window: the StatefulSet must not
	// move and the other pods must not be replaced or restarted.
	windowCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	seen := watchPodUIDs(windowCtx, t, ns, a.Name)
	var mu sync.Mutex
	var drift []string
	go func() {
		for windowCtx.Err() == nil {
			now, _, err := currentRollout(windowCtx, ns, a.Name)
			cur, err2 := podStates(windowCtx, ns, a.Name)
			mu.Lock()
			if err == nil && now != before {
				drift = append(drift, fmt.Sprintf("StatefulSet %+v -> %+v", before, now))
			}
			if err2 == nil {
				for name, p := range pods {
					if c, ok := cur[name]; ok && name != primaryName && c != p {
						drift = append(drift, fmt.Sprintf("%s: %s -> %s", name, p, c))
					}
				}
			}
			mu.Unlock()
			select {
			case <-windowCtx.Done():
			case <-time.After(time.Second):
			}
		}
	}()

	// The secondaries keep answering while the primary is away.
	loopCtx, stopLoops := context.WithCancel(ctx)
	defer stopLoops()
	loops := make([]chan queryStats, 0, len(ips)-1)
	for _, ip := range ips[1:] {
		ch := make(chan queryStats, 1)
		loops = append(loops, ch)
		go func() { ch <- queryLoop(loopCtx, ip, a.Catalog, 200*time.Millisecond, 300, window) }()
	}

	start := time.Now()
	testkit.Must(t, env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: primaryName}}, client.Preconditions{UID: &old.UID}))
	var back podState
	NewWithT(t).Eventually(func() error {
		p, err := env.Cluster.Client().CoreV1().Pods(ns).Get(ctx, primaryName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID == old.UID {
			return fmt.Errorf("still the old pod %s", shortUID(p.UID))
		}
		if !localcluster.PodReady(p) {
			return fmt.Errorf("new pod %s not Ready yet (phase %s)", shortUID(p.UID), p.Status.Phase)
		}
		back = podState{UID: p.UID, IP: p.Status.PodIP}
		return nil
	}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "the primary pod did not come back Ready\n%s",
		func() string { return env.Cluster.DescribePod(ctx, ns, primaryName) })
	t.Logf("primary back and Ready after %s: %s -> %s", time.Since(start).Round(time.Millisecond), old, back)
	if back.IP == old.IP {
		t.Errorf("the primary came back with its old IP %s; the local cluster should hand out a new one", old.IP)
	}
	waitSOA(ctx, t, back.IP, a.Catalog, "the new primary")

	// Still replicating from the primary Service after the restart.
	bumpCatalogEverywhere(ctx, t, a)

	// No data lost: what was there is there; what comes next arrives.
	ips = podIPs(ctx, t, ns, a.Name, a.Replicas)
	for i, ip := range ips {
		who := fmt.Sprintf("%s-%d", a.Name, i)
		waitA(ctx, t, ip, "api."+zone, "192.0.2.80", who)
		waitA(ctx, t, ip, "www."+zone, "192.0.2.10", who)
	}
	added := time.Now()
	testkit.Must(t, env.Client.Create(ctx, record("after", "192.0.2.81")))
	for i, ip := range ips {
		waitA(ctx, t, ip, "after."+zone, "192.0.2.81", fmt.Sprintf("%s-%d", a.Name, i))
	}
	t.Logf("a DNSRecord created after the restart reached every pod in %s", time.Since(added).Round(time.Millisecond))

	// Sit out the rest of the window.
	if rest := window - time.Since(start); rest > 0 {
		time.Sleep(rest)
	}
	stopLoops()
	for i, ch := range loops {
		s := <-ch
		t.Logf("secondary %s-%d during the window: %s", a.Name, i+1, s)
		if s.failed > 0 {
			t.Errorf("secondary %s-%d failed %d of %d catalog queries while the primary restarted: %v", a.Name, i+1, s.failed, s.sent, s.errors)
		}
	}
	stopWatch()
	mu.Lock()
	if len(drift) > 0 {
		t.Errorf("within %s of deleting the primary: %v", window, slices.Compact(drift))
	}
	mu.Unlock()
	after, _, err := currentRollout(ctx, ns, a.Name)
	testkit.Must(t, err)
	final, err := podStates(ctx, ns, a.Name)
	testkit.Must(t, err)
	uids := seen()
	if after != before {
		t.Errorf("the StatefulSet was rolled: %+v -> %+v", before, after)
	}
	if got := uids[primaryName]; len(got) != 2 || got[0] != old.UID {
		t.Errorf("the primary had incarnations %v, want the old %s and exactly one replacement", got, old.UID)
	}
	extra := 0
	for name, p := range pods {
		if name == primaryName {
			continue
		}
		if len(uids[name]) != 1 {
			t.Errorf("%s was recreated: incarnations %v", name, uids[name])
		}
		extra += int(final[name].Restarts - p.Restarts)
	}
	if extra != 0 || final[primaryName].Restarts != 0 {
		t.Errorf("containers restarted: %d on the secondaries, %d in the new primary", extra, final[primaryName].Restarts)
	}
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Name}, &bc))
	if bc.Status.ConfigHash != before.Hash {
		t.Errorf("status.configHash %s -> %s", shortHash(before.Hash), shortHash(bc.Status.ConfigHash))
	}
	t.Logf("after %s: generation %d, hash %s (unchanged), pods %s; extra restarts 0, secondaries recreated 0",
		time.Since(start).Round(time.Second), after.Generation, shortHash(after.Hash), describePods(final))
}
