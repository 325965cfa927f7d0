package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// Sizes of the chaos runs (issue 15 item 7).
const (
	// chaosKept DNSRecords exist before the first fault and are edited
	// while each fault lasts: none may be lost or doubled.
	chaosKept = 50
	// chaosQueryInterval paces the queries sent through the query Service
	// during each fault: 200 per second, from chaosQueryWorkers clients.
	chaosQueryInterval = 5 * time.Millisecond
	chaosQueryWorkers  = 4
	// chaosCut is how long a secondary is cut off the network.
	chaosCut = 60 * time.Second
)

// chaosCreated DNSRecords are being created when the operator's leader is
// killed. Issue 15 asks for 10,000: `make bench` passes that; `make test`
// keeps the default, which exercises the same path in a quarter of the time.
var chaosCreated = flag.Int("chaos-created", 2000, "DNSRecords TestChaos creates while it kills the operator's leader")

// leaderLeaseName is the operator's leader-election Lease (cmd/manager.go).
const leaderLeaseName = "bind-operator.bind.unkin.net"

// TestChaos (issue 15 item 7) breaks one thing at a time in a 3-replica
// BindCluster on the real node while DNSRecords change through the API
// server and 200 queries per second go through the query Service:
//
//   - named killed (SIGKILL) in the primary, then in a secondary;
//   - the primary's agent killed;
//   - the operator's leader killed while DNSRecords are created (2,000;
//     10,000 in `make bench`: -chaos-created);
//   - a secondary cut off the network for 60 s, then restored: it catches
//     up by IXFR (the transfer named logs carries the changes, not the
//     zone);
//   - the operator's leader killed while those DNSRecords are deleted:
//     the tombstones it held die with it, and its successor's sweep
//     removes their data (docs/behaviours.md, "A deleted DNSRecord's data
//     goes");
//   - the primary's volume lost (its claim and pod deleted);
//   - the cluster rolled (its transfer key rotated);
//   - kube-apiserver restarted.
//
// After each, every pod must serve every DNSRecord exactly once with its
// last value: nothing lost, nothing doubled. The queries answered and
// lost, and the time until every pod served the final data, are printed
// as a table (`make bench` runs this test too). It is not parallel: it
// kills the operator, which the parallel tests share.
func TestChaos(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-chaos")
	a := authoritative{Namespace: ns, Name: "chaos", Replicas: 3, Catalog: "catalog.chaos.internal", Storage: true}
	a.create(ctx, t)
	const zone = "chaos.e2e.example"
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("zone", zone, "")))
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	ips := a.servedByAll(ctx, t, zone)
	queryIP, err := env.Cluster.ServiceIP(ctx, ns, a.Name)
	testkit.Must(t, err)
	c := &chaos{a: a, zone: zone, queryIP: queryIP, want: map[string]string{}}
	for i := range chaosKept {
		name := fmt.Sprintf("keep-%02d", i)
		c.want[name] = benchValue(i)
		testkit.Must(t, env.Client.Create(ctx, chaosRecord(ns, name, benchValue(i))))
	}
	c.transfer = readTSIGKey(ctx, t, ns, a.transferKey())
	c.converge(ctx, t, "the kept records", 3*time.Minute)
	t.Logf("%d DNSRecords served by %v", chaosKept, ips)

	var rows []chaosRow
	rows = append(rows,
		c.run(ctx, t, "named killed in the primary", func() func() {
			c.kill(ctx, t, a.Name+"-0", "named")
			return nil
		}),
		c.run(ctx, t, "named killed in a secondary", func() func() {
			c.kill(ctx, t, a.Name+"-1", "named")
			return nil
		}),
		c.run(ctx, t, "the agent killed in the primary", func() func() {
			c.kill(ctx, t, a.Name+"-0", "bind-operator")
			return nil
		}),
		// Before the cut: with 2,050 records in the zone, an incremental
		// transfer of a few changes is far smaller than the zone (with 50,
		// named sends the whole zone instead: max-ixfr-ratio).
		c.killOperatorWhileCreating(ctx, t),
		c.cutSecondary(ctx, t, a.Name+"-2"),
		c.killOperatorWhileDeleting(ctx, t),
		c.run(ctx, t, "the primary's volume lost (its claim and pod deleted)", func() func() {
			return c.losePrimaryVolume(ctx, t)
		}),
		c.run(ctx, t, "the cluster rolled (its transfer key rotated)", func() func() {
			before, _, err := currentRollout(ctx, ns, a.Name)
			testkit.Must(t, err)
			testkit.Must(t, env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.transferKey() + v1.TSIGSecretNameSuffix}}))
			return func() {
				c.awaitRolled(ctx, t, before.Hash)
				c.transfer = readTSIGKey(ctx, t, ns, a.transferKey())
			}
		}),
		c.restartAPIServer(ctx, t),
	)
	printChaosTable(t, rows)
}

// chaos is the state TestChaos's faults share: the cluster, its zone, the
// value each kept DNSRecord must end with, and the key that reads the
// zone by transfer.
type chaos struct {
	a        authoritative
	zone     string
	queryIP  string
	transfer tsigKey
	want     map[string]string // owner name (relative) → its one A value
	edits    int
}

type chaosRow struct {
	fault, queries, records, converged, note string
}

func chaosRecord(ns, name, value string) *v1.DNSRecord {
	return &v1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: "zone"}, Name: v1.RecordName(name), Type: "A",
			TTL: ptr.To[v1.TTL](60), Values: []string{value}},
	}
}

// run applies fault while the kept DNSRecords are edited (one edit every
// 200 ms, ten in all) and queries go through the query Service, calls the
// function fault returns (if any) once the edits are made, then waits
// until every pod serves exactly the wanted data.
func (c *chaos) run(ctx context.Context, t *testing.T, what string, fault func() (after func())) chaosRow {
	t.Helper()
	stop, stats := c.queries(ctx)
	start := time.Now()
	after := fault()
	c.edit(ctx, t, 10, 200*time.Millisecond)
	if after != nil {
		after()
	}
	res := c.converge(ctx, t, what, 5*time.Minute)
	stop()
	return chaosRow{fault: what, queries: (<-stats).brief(), records: fmt.Sprintf("%d records: %s", len(c.want), res), converged: time.Since(start).Round(100 * time.Millisecond).String()}
}

// edit changes n kept DNSRecords, one every interval, through the API
// server (retried while it is down).
func (c *chaos) edit(ctx context.Context, t *testing.T, n int, interval time.Duration) {
	t.Helper()
	for range n {
		name := fmt.Sprintf("keep-%02d", c.edits%chaosKept)
		value := benchValue(chaosKept + c.edits)
		c.edits++
		testkit.Must(t, retryAPI(ctx, "editing DNSRecord "+name, func() error {
			r := &v1.DNSRecord{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: c.a.Namespace, Name: name}, r); err != nil {
				return err
			}
			patch := client.MergeFrom(r.DeepCopy())
			r.Spec.Values = []string{value}
			return env.Client.Patch(ctx, r, patch)
		}))
		c.want[name] = value
		time.Sleep(interval)
	}
}

// queries sends SOA queries to the query Service from chaosQueryWorkers
// clients, together one every chaosQueryInterval, until stop is called (at
// most 10 minutes). Several clients, so that a query waiting out its
// timeout does not stop the others.
func (c *chaos) queries(ctx context.Context) (stop func(), stats <-chan queryStats) {
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan queryStats, 1)
	go func() {
		each := make([]queryStats, chaosQueryWorkers)
		var wg sync.WaitGroup
		for i := range each {
			wg.Go(func() {
				each[i] = queryLoop(ctx, c.queryIP, c.zone, chaosQueryWorkers*chaosQueryInterval, 120000/chaosQueryWorkers, 10*time.Minute)
			})
		}
		wg.Wait()
		var all queryStats
		for _, s := range each {
			all.sent += s.sent
			all.retried += s.retried
			all.failed += s.failed
			all.elapsed = max(all.elapsed, s.elapsed)
		}
		out <- all
	}()
	return cancel, out
}

func (s queryStats) brief() string {
	return fmt.Sprintf("%d sent over %s, %d answered, %d lost (%d answered only on the TCP retry)",
		s.sent, s.elapsed.Round(100*time.Millisecond), s.sent-s.failed, s.failed, s.retried-s.failed)
}

// chaosCheck is what one pod serves against what it should.
type chaosCheck struct {
	lost, doubled, extra int
	first                string
}

func (r chaosCheck) ok() bool { return r.lost == 0 && r.doubled == 0 && r.extra == 0 }

func (r chaosCheck) String() string {
	return fmt.Sprintf("%d lost, %d doubled, %d unexpected", r.lost, r.doubled, r.extra)
}

// converge waits until every pod serves exactly c.want: every record
// once, with its last value, and nothing else. The primary's zone is read
// by transfer (the secondaries refuse transfers); each secondary must
// serve the primary's serial and then answer every name with exactly its
// wanted value.
func (c *chaos) converge(ctx context.Context, t *testing.T, what string, limit time.Duration) chaosCheck {
	t.Helper()
	var last chaosCheck
	NewWithT(t).Eventually(func(g Gomega) {
		ips := podIPs(ctx, t, c.a.Namespace, c.a.Name, c.a.Replicas)
		got, serial, err := zoneA(ips[0], c.zone, c.transfer)
		g.Expect(err).NotTo(HaveOccurred(), "transfer of %s from the primary", c.zone)
		last = compareA(got, c.want)
		g.Expect(last.ok()).To(BeTrue(), "%s: the primary serves %s; first: %s", what, last, last.first)
		for i, ip := range ips[1:] {
			s, err := soaSerial(ip, c.zone)
			g.Expect(err).NotTo(HaveOccurred(), "SOA of %s from %s-%d", c.zone, c.a.Name, i+1)
			g.Expect(s).To(Equal(serial), "%s: %s-%d serves serial %d, the primary %d", what, c.a.Name, i+1, s, serial)
		}
		for i, ip := range ips[1:] {
			r := answersA(ip, c.zone, c.want)
			g.Expect(r.ok()).To(BeTrue(), "%s: %s-%d answers %s; first: %s", what, c.a.Name, i+1, r, r.first)
		}
	}).WithContext(ctx).WithTimeout(limit).WithPolling(500 * time.Millisecond).Should(Succeed())
	return last
}

// answersA asks server for every wanted name's A record (UDP, TCP when the
// answer is truncated or lost) and compares the answers with want.
func answersA(server, zone string, want map[string]string) chaosCheck {
	got := map[string][]string{}
	for name := range want {
		in, err := localcluster.Dig(server, name+"."+zone, dns.TypeA)
		if err != nil || in.Truncated {
			in, err = localcluster.DigTCP(server, name+"."+zone, dns.TypeA)
		}
		if err == nil && in.Rcode == dns.RcodeSuccess {
			got[name] = aValues(in)
		}
	}
	return compareA(got, want)
}

// compareA compares a zone's A records with want, owner names relative.
func compareA(got map[string][]string, want map[string]string) chaosCheck {
	var r chaosCheck
	note := func(s string) {
		if r.first == "" {
			r.first = s
		}
	}
	for name, v := range want {
		vs := got[name]
		switch {
		case len(vs) > 1:
			r.doubled++
			note(fmt.Sprintf("%s has %v", name, vs))
		case len(vs) == 0 || vs[0] != v:
			r.lost++
			note(fmt.Sprintf("%s has %v, want %s", name, vs, v))
		}
	}
	for name, vs := range got {
		if _, ok := want[name]; !ok {
			r.extra++
			note(fmt.Sprintf("%s has %v and should not exist", name, vs))
		}
	}
	return r
}

// zoneA transfers zone from server, signed with key, and returns its A
// records by relative owner name and its serial.
func zoneA(server, zone string, key tsigKey) (map[string][]string, uint32, error) {
	out := map[string][]string{}
	var serial uint32
	suffix := "." + dns.Fqdn(zone)
	err := eachTransferred(server, zone, key, func(rr dns.RR) {
		switch rr := rr.(type) {
		case *dns.A:
			name := strings.TrimSuffix(rr.Hdr.Name, suffix)
			out[name] = append(out[name], rr.A.String())
		case *dns.SOA:
			serial = rr.Serial
		}
	})
	if err != nil {
		return nil, 0, err
	}
	return out, serial, nil
}

// kill sends SIGKILL to the process named comm in pod and waits until its
// container has started it again.
func (c *chaos) kill(ctx context.Context, t *testing.T, pod, comm string) {
	t.Helper()
	p, err := env.Cluster.Client().CoreV1().Pods(c.a.Namespace).Get(ctx, pod, metav1.GetOptions{})
	testkit.Must(t, err)
	killProcess(ctx, t, string(p.UID), comm, pod)
}

// killProcess SIGKILLs the process named comm in the pod with this UID and
// waits until a new one runs.
func killProcess(ctx context.Context, t *testing.T, uid, comm, who string) {
	t.Helper()
	var victim hostProcess
	for _, hp := range podProcesses(uid) {
		if hp.comm == comm {
			victim = hp
		}
	}
	if victim.pid == 0 {
		t.Fatalf("no %s process in pod %s on this node", comm, who)
	}
	testkit.Must(t, syscall.Kill(victim.pid, syscall.SIGKILL))
	NewWithT(t).Eventually(func() bool {
		for _, hp := range podProcesses(uid) {
			if hp.comm == comm && (hp.pid != victim.pid || hp.start != victim.start) {
				return true
			}
		}
		return false
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(100*time.Millisecond).Should(BeTrue(), "%s in %s was not restarted", comm, who)
}

// cutSecondary drops every packet of pod for chaosCut except loopback and
// the node's address (nftables in the pod's network namespace: BIND and
// its agent still talk inside the pod, the kubelet still probes it), edits
// records meanwhile, restores the network and waits
// for the secondary to catch up. It asserts from the secondary's named log
// that it caught up by an incremental transfer.
func (c *chaos) cutSecondary(ctx context.Context, t *testing.T, pod string) chaosRow {
	t.Helper()
	sandbox := podProcess(ctx, t, c.a.Namespace, pod, "pause").pid
	nft := func(stdin string, args ...string) error {
		cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(sandbox), "-n", "nft"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("nft %v in pod %s: %v: %s", args, pod, err, out)
		}
		return nil
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			testkit.Must(t, nft("", "delete", "table", "inet", "chaos"))
		}
	}
	// Restored whatever happens, so a failed run's dump can still reach
	// the pod.
	t.Cleanup(func() {
		if !restored {
			_ = nft("", "delete", "table", "inet", "chaos")
		}
	})
	since := time.Now()
	row := c.run(ctx, t, fmt.Sprintf("a secondary cut off the network for %s", chaosCut), func() func() {
		// The node's own address stays reachable: the kubelet probes the
		// pod from it, and a secondary cut off from its peers is not one
		// its kubelet restarts.
		testkit.Must(t, nft(fmt.Sprintf(`table inet chaos {
  chain in { type filter hook input priority -300; policy drop; iif lo accept; ip saddr %[1]s accept; }
  chain out { type filter hook output priority -300; policy drop; oif lo accept; ip daddr %[1]s accept; }
}
`, localcluster.NodeIP), "-f", "-"))
		cut := time.Now()
		return func() {
			time.Sleep(time.Until(cut.Add(chaosCut)))
			restore()
		}
	})
	// What the secondary transferred after the cut: each transfer of the
	// zone carries a few records (an IXFR: SOA, deletions, SOA, additions,
	// SOA), never the whole zone (an AXFR: every record between two SOAs).
	logs, err := env.Cluster.Logs(ctx, c.a.Namespace, pod, "named", false)
	testkit.Must(t, err)
	transfers := transfersSince(logs, c.zone, since)
	if len(transfers) == 0 {
		t.Fatalf("%s caught up, but its named logged no transfer of %s since the cut:\n%s", pod, c.zone, tail(logs, 30))
	}
	for _, n := range transfers {
		if n >= len(c.want) {
			t.Errorf("%s transferred %s with %d records after the cut: a full transfer (the zone has %d A records), not an incremental one", pod, c.zone, n, len(c.want))
		}
	}
	row.note = fmt.Sprintf("caught up by %d incremental transfer(s), of %v records (named's log)", len(transfers), transfers)
	return row
}

// transferLine is named's log line for a finished zone transfer.
var transferLine = regexp.MustCompile(`^(\d{2}-\w{3}-\d{4} \d{2}:\d{2}:\d{2}\.\d{3}) transfer of '([^/]+)/IN' from \S+: Transfer completed: \d+ messages, (\d+) records`)

// transfersSince returns the record counts of zone's completed transfers
// logged at or after since.
func transfersSince(logs, zone string, since time.Time) []int {
	var out []int
	for _, line := range strings.Split(logs, "\n") {
		m := transferLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || m[2] != zone {
			continue
		}
		at, err := time.ParseInLocation("02-Jan-2006 15:04:05.000", m[1], time.UTC)
		if err != nil || at.Before(since.Truncate(time.Millisecond)) {
			continue
		}
		n, _ := strconv.Atoi(m[3])
		out = append(out, n)
	}
	return out
}

// killOperatorWhileCreating creates chaosCreated DNSRecords from 32
// clients and SIGKILLs the operator's leader when a quarter exist. Every
// record must end up served exactly once and Ready.
func (c *chaos) killOperatorWhileCreating(ctx context.Context, t *testing.T) chaosRow {
	t.Helper()
	var killedAfter time.Duration
	row := c.run(ctx, t, fmt.Sprintf("the operator's leader killed while %d DNSRecords are created", *chaosCreated), func() func() {
		// The webhooks run in the operator's pods: a create in the moment
		// one is gone is refused, and retried as a GitOps tool would.
		killedAfter = c.killLeaderQuarterWay(ctx, t, "created", func(i int) error {
			return retryCreate(ctx, chaosRecord(c.a.Namespace, chaosName(i), benchValue(i)))
		})
		for i := range *chaosCreated {
			c.want[chaosName(i)] = benchValue(i)
		}
		return nil
	})
	NewWithT(t).Eventually(func() (int, error) { return notReadyRecords(ctx, env.Client, c.a.Namespace) }).
		WithContext(ctx).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(BeZero(), "DNSRecords not Ready after the operator was killed")
	row.note = fmt.Sprintf("leader killed %s into the creation, a quarter created; every DNSRecord Ready", killedAfter.Round(time.Millisecond))
	return row
}

// killOperatorWhileDeleting deletes the DNSRecords killOperatorWhileCreating
// made, from 32 clients, and SIGKILLs the operator's leader when a quarter
// are gone. The objects leave at once (no finalizer); the data of those
// the killed leader had not finished, and of those deleted before its
// successor started, must still leave every pod: no name may stay behind.
func (c *chaos) killOperatorWhileDeleting(ctx context.Context, t *testing.T) chaosRow {
	t.Helper()
	var killedAfter time.Duration
	row := c.run(ctx, t, fmt.Sprintf("the operator's leader killed while %d DNSRecords are deleted", *chaosCreated), func() func() {
		killedAfter = c.killLeaderQuarterWay(ctx, t, "deleted", func(i int) error {
			r := chaosRecord(c.a.Namespace, chaosName(i), benchValue(i))
			return retryAPI(ctx, "deleting DNSRecord "+r.Name, func() error {
				return client.IgnoreNotFound(env.Client.Delete(ctx, r))
			})
		})
		for i := range *chaosCreated {
			delete(c.want, chaosName(i))
		}
		return nil
	})
	row.note = fmt.Sprintf("leader killed %s into the deletes, a quarter deleted; no deleted record's data left", killedAfter.Round(time.Millisecond))
	return row
}

// chaosName is the name of the i-th DNSRecord the leader-kill scenarios
// create and delete.
func chaosName(i int) string { return fmt.Sprintf("c-%05d", i) }

// killLeaderQuarterWay runs do for each of chaosCreated records from 32
// clients, SIGKILLs the operator's leader once a quarter are done, waits
// for the rest and returns how long after the start the kill came.
func (c *chaos) killLeaderQuarterWay(ctx context.Context, t *testing.T, what string, do func(i int) error) time.Duration {
	t.Helper()
	var done atomic.Int64
	finished := make(chan error, 1)
	begin := time.Now()
	go func() {
		finished <- forEachRecord(ctx, *chaosCreated, func(i int) error {
			err := do(i)
			done.Add(1)
			return err
		})
	}()
	NewWithT(t).Eventually(done.Load).WithContext(ctx).WithTimeout(5*time.Minute).WithPolling(10*time.Millisecond).
		Should(BeNumerically(">=", *chaosCreated/4), "DNSRecords being %s", what)
	killedAfter := time.Since(begin)
	c.killLeader(ctx, t)
	testkit.Must(t, <-finished)
	return killedAfter
}

// restartAPIServer restarts kube-apiserver while the kept DNSRecords are
// edited: the edits made while it is down wait for it (retried), the
// operator's watches and leader election ride out the gap, and BIND keeps
// answering, since nothing in the data plane needs the API server.
func (c *chaos) restartAPIServer(ctx context.Context, t *testing.T) chaosRow {
	t.Helper()
	restartsBefore := operatorRestarts(ctx, t)
	var down time.Duration
	row := c.run(ctx, t, "kube-apiserver restarted", func() func() {
		began := time.Now()
		done := make(chan error, 1)
		go func() { done <- env.Cluster.RestartAPIServer(ctx) }()
		// The edits start once it is down, so that they meet the gap.
		NewWithT(t).Eventually(func() error {
			_, err := env.Cluster.Client().Discovery().ServerVersion()
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(50*time.Millisecond).Should(HaveOccurred(), "the API server did not stop")
		return func() {
			testkit.Must(t, <-done)
			down = time.Since(began)
		}
	})
	row.note = fmt.Sprintf("API server stopped and ready again after %s; operator containers restarted %d times",
		down.Round(100*time.Millisecond), operatorRestarts(ctx, t)-restartsBefore)
	if exits := operatorExits(ctx, t); exits != "" {
		t.Logf("kube-apiserver restarted: %s", exits)
	}
	return row
}

// operatorRestarts is the sum of the operator containers' restart counts.
func operatorRestarts(ctx context.Context, t *testing.T) int32 {
	t.Helper()
	pods, err := env.OperatorPods(ctx)
	testkit.Must(t, err)
	var n int32
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			n += s.RestartCount
		}
	}
	return n
}

// operatorExits says, per operator pod that restarted, how its container
// last ended: the exit code and the first line of the termination message
// (the end of the log: FallbackToLogsOnError).
func operatorExits(ctx context.Context, t *testing.T) string {
	t.Helper()
	pods, err := env.OperatorPods(ctx)
	testkit.Must(t, err)
	var out []string
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			if last := s.LastTerminationState.Terminated; s.RestartCount > 0 && last != nil {
				msg, _, _ := strings.Cut(strings.TrimSpace(last.Message), "\n")
				out = append(out, fmt.Sprintf("%s restarted %d times, last exit %d: %.200s", p.Name, s.RestartCount, last.ExitCode, msg))
			}
		}
	}
	return strings.Join(out, "; ")
}

// retryCreate creates obj; an object that already exists was created by
// an attempt whose answer was lost.
func retryCreate(ctx context.Context, obj client.Object) error {
	return retryAPI(ctx, fmt.Sprintf("creating %T %s", obj, obj.GetName()), func() error {
		return client.IgnoreAlreadyExists(env.Client.Create(ctx, obj.DeepCopyObject().(client.Object)))
	})
}

// retryAPI calls f until it succeeds, for up to a minute: while the API
// server restarts, or cannot reach the webhooks, calls fail and are
// retried, as a GitOps tool would.
func retryAPI(ctx context.Context, what string, f func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// killLeader SIGKILLs the manager process of the operator pod that holds
// the leader-election Lease.
func (c *chaos) killLeader(ctx context.Context, t *testing.T) {
	leader := leaderPod(ctx, t)
	killProcess(ctx, t, string(leader.UID), "bind-operator", leader.Name)
	t.Logf("killed the operator's leader %s", leader.Name)
}

// leaderPod is the operator pod that holds the leader-election Lease.
// Right after the operator's pods were replaced the Lease still names a
// pod that is gone, until a new one takes it over (its lease duration):
// leaderPod waits for that, up to two minutes.
func leaderPod(ctx context.Context, t *testing.T) corev1.Pod {
	t.Helper()
	var leader corev1.Pod
	NewWithT(t).Eventually(func() error {
		var lease coordinationv1.Lease
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: leaderLeaseName}, &lease); err != nil {
			return err
		}
		holder, _, _ := strings.Cut(ptr.Deref(lease.Spec.HolderIdentity, ""), "_")
		pods, err := env.OperatorPods(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Name == holder && p.DeletionTimestamp == nil })
		if i < 0 {
			return fmt.Errorf("the Lease names %q, which is not a running operator pod", holder)
		}
		leader = pods[i]
		return nil
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return leader
}

// losePrimaryVolume deletes the primary's PersistentVolumeClaim and then
// its pod: the StatefulSet brings the primary back on a new, empty
// volume. The returned function waits until the new primary is ready. A
// pod recreated while its old claim was still being deleted waits for a
// claim nobody creates (the StatefulSet controller makes claims only with
// pods): it is deleted once more, as an operator of the cluster would.
func (c *chaos) losePrimaryVolume(ctx context.Context, t *testing.T) func() {
	t.Helper()
	pods := env.Cluster.Client().CoreV1().Pods(c.a.Namespace)
	claims := env.Cluster.Client().CoreV1().PersistentVolumeClaims(c.a.Namespace)
	primary, claim := c.a.Name+"-0", "data-"+c.a.Name+"-0"
	old, err := claims.Get(ctx, claim, metav1.GetOptions{})
	testkit.Must(t, err)
	testkit.Must(t, claims.Delete(ctx, claim, metav1.DeleteOptions{}))
	testkit.Must(t, pods.Delete(ctx, primary, metav1.DeleteOptions{}))
	return func() {
		NewWithT(t).Eventually(func(g Gomega) {
			p, err := pods.Get(ctx, primary, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			cl, err := claims.Get(ctx, claim, metav1.GetOptions{})
			replaced := err == nil && cl.UID != old.UID
			if !replaced && p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil && time.Since(p.CreationTimestamp.Time) > 5*time.Second {
				_ = pods.Delete(ctx, primary, metav1.DeleteOptions{})
			}
			g.Expect(err).NotTo(HaveOccurred(), "claim %s", claim)
			g.Expect(cl.UID).NotTo(Equal(old.UID), "claim %s not replaced yet", claim)
			g.Expect(cl.Status.Phase).To(Equal(corev1.ClaimBound), "claim %s", claim)
			g.Expect(localcluster.PodReady(p)).To(BeTrue(), "the new primary is not ready")
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}
}

// awaitRolled waits until the StatefulSet has rolled away from the config
// hash it had.
func (c *chaos) awaitRolled(ctx context.Context, t *testing.T, hash string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		now, s, err := currentRollout(ctx, c.a.Namespace, c.a.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(now.Hash).NotTo(Equal(hash))
		g.Expect(s.Status.ObservedGeneration).To(Equal(s.Generation))
		g.Expect(s.Status.CurrentRevision).To(Equal(s.Status.UpdateRevision))
		g.Expect(s.Status.UpdatedReplicas).To(Equal(c.a.Replicas))
		g.Expect(s.Status.ReadyReplicas).To(Equal(c.a.Replicas))
	}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// printChaosTable prints the figures as a markdown table on stdout and in
// the test log.
func printChaosTable(t *testing.T, rows []chaosRow) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| fault (3 replicas, %d q/s through the query Service) | queries | records on every pod, converged | every pod serves the final data after | note |\n|---|---|---|---|---|\n", time.Second/chaosQueryInterval)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.fault, r.queries, r.records, r.converged, r.note)
	}
	fmt.Fprintln(os.Stdout, b.String())
	t.Log(b.String())
}
