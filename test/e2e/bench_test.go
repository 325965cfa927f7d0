package e2e

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// Sizes of the in-cluster benchmark (issue 6 i).
const (
	// benchChanges per latency path: a p99 is the tenth slowest of 1,000
	// changes. Of 200 it was the third slowest, and one CPU stall of the
	// node that caught three edits moved it from 34 to 70 ms between
	// runs of one build on one day; of 50 it was one stall from the max.
	benchChanges = 1000
	// policyEdits per BindPolicy rule path: each waits for both resolver
	// pods to reload the policy zone (about 100 ms), so 200 (a p99 the
	// third slowest) keep the path to 20 s.
	policyEdits  = 200
	benchRecords = 10000
	benchBatch   = 500 // records per raw UPDATE: the fastest size measured (docs/bind-facts.md)
	// editGoal is issue 15's p99 for an edit to be served everywhere; the
	// edits slower than it are listed stage by stage.
	editGoal = 50 * time.Millisecond
)

// benchMedium is the data volume of the bench's cluster (no claims). The
// default, Memory, is the medium issue 15's edit p99 is measured on: on
// Disk, BIND's journal fsyncs put this machine's disk stalls into the
// tail (docs/behaviours.md, "The data volume in memory").
var benchMedium = flag.String("bench-medium", string(v1.StorageMediumMemory), "the data volume medium of TestInClusterBench's cluster: Memory or Disk")

// benchPacedEvery, when set, measures the raw and DNSRecord paths a
// second time with their changes started that far apart. Back to back,
// each change starts when the previous is served, and the node's two CPUs
// are 85% busy with the changes themselves (about 45 ms of CPU per edit
// across the API server, etcd, the managers, three named and the
// container runtime): that measures the node's capacity as much as an
// edit's latency. Paced, the node is mostly idle between changes, as under
// a user's edits. `make bench` sets 100ms; `make test` leaves it off (it
// adds 2,000 changes, about 200 s).
var benchPacedEvery = flag.Duration("bench-paced-every", 0, "TestInClusterBench measures the raw and DNSRecord paths again with changes started this far apart (0: not measured)")

// benchSizeLimit bounds the bench cluster's Memory volume, below named's
// memory limit in the sample (the zones of 10,000 records take about
// 2 MiB).
var benchSizeLimit = resource.MustParse("64Mi")

// sampleResources are named's resources in the shipped authoritative
// sample: the bench measures a cluster sized as users are shown to size
// it. Without requests its pods are BestEffort, and on a busy node named
// then gets the smallest CPU share of any process there.
func sampleResources(t *testing.T) corev1.ResourceRequirements {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(SamplesDir(), "bind_v1alpha1_bindcluster.yaml"))
	testkit.Must(t, err)
	var c v1.BindCluster
	testkit.Must(t, yaml.UnmarshalStrict(b, &c))
	if c.Spec.Resources.Requests.Cpu().IsZero() {
		t.Fatalf("the authoritative sample requests no CPU: %+v", c.Spec.Resources)
	}
	return c.Spec.Resources
}

// TestInClusterBench (issue 6 i) measures the operator in the local cluster
// beside raw BIND in the same run, on one 3-replica BindCluster:
//
//   - update → served on every secondary over benchChanges changes: a
//     signed UPDATE sent straight to the primary pod (raw BIND) against a
//     DNSRecord edit through the API server, its webhooks and the
//     operator;
//   - benchRecords records: sent straight to the primary in batches of
//     benchBatch (raw BIND) against as many DNSRecord objects created
//     through the API server, until all are served by the primary and
//     every secondary serves the primary's final serial.
//
// It prints a table and asserts only what must hold whatever the machine's
// speed: every change and every record is served everywhere.
// `make bench` runs it too.
func TestInClusterBench(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if *operatorPprof != "" || *operatorEnv != "" {
		enableOperatorPprof(ctx, t)
		setOperatorEnv(ctx, t)
		restartOperator(ctx, t)
	}
	ns := newNamespace(ctx, t, "e2e-bench")
	medium := v1.StorageMedium(*benchMedium)
	resources := sampleResources(t)
	var sizeLimit *resource.Quantity
	volumeNote := ""
	if medium == v1.StorageMediumMemory {
		sizeLimit = &benchSizeLimit
		volumeNote = " (in memory: counted against the pod's)"
	}
	a := authoritative{Namespace: ns, Name: "bench", Replicas: 3, Catalog: "catalog.bench.internal", Mutate: func(c *v1.BindCluster) {
		c.Spec.Storage.Medium = medium
		c.Spec.Storage.SizeLimit = sizeLimit
		c.Spec.Resources = resources
	}}
	a.create(ctx, t)
	testkit.Must(t, env.Client.Create(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "updates"}}))
	const opZone, rawZone = "op.bench.e2e.example", "raw.bench.e2e.example"
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("op", opZone, "updates")))
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("raw", rawZone, "updates")))
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	ips := a.servedByAll(ctx, t, opZone, rawZone)
	updates := readTSIGKey(ctx, t, ns, "updates")
	transfer := readTSIGKey(ctx, t, ns, a.transferKey())
	own := &requestCounter{resource: "dnsrecords"}
	c := benchClient(t, own)

	var rows []benchRow
	// The raw baseline signs with the key the operator signs with (the
	// cluster's transfer key): named grants it at once. The zone's update
	// key, a client's, has each record judged by the agent (owned sets).
	rawUpdate := func(key tsigKey, name string) func(i int, value string) {
		return func(i int, value string) {
			rr, err := dns.NewRR(fmt.Sprintf("%s.%s. 60 IN A %s", name, rawZone, value))
			testkit.Must(t, err)
			m := new(dns.Msg)
			m.SetUpdate(dns.Fqdn(rawZone))
			m.RemoveRRset([]dns.RR{rr})
			m.Insert([]dns.RR{rr})
			r, err := exchangeSigned("tcp", ips[0], m, key)
			if err != nil || r.Rcode != dns.RcodeSuccess {
				t.Fatalf("raw UPDATE %d signed with %s: err=%v reply=%v", i, key.Name, err, r)
			}
		}
	}
	// The node at rest, for the readings during the edits to be read
	// against: the cluster up, nothing probed, polled or changed.
	restTimes := readProcessTimesAt(t)
	time.Sleep(restSpan)
	restTimes = append(restTimes, readProcessTimesAt(t)...)
	// On request (-bench-disk-probe), the disk under the cluster's volumes
	// and etcd is timed while the edits are: a stalled fsync delays every
	// path alike.
	var disk *probe[diskSample]
	if *benchDiskProbe {
		disk = startDiskProbe(t, env.Cluster.WorkDir())
	}
	cpu := startCPUProbe(t)
	throttledBefore := operatorThrottling(ctx, t)
	rawTimes := readProcessTimesAt(t)
	rawLat := benchLatency(ctx, t, ips, "lat."+rawZone, 0, rawUpdate(transfer, "lat"))
	rawTimes = append(rawTimes, readProcessTimesAt(t)...)
	guardedLat := benchLatency(ctx, t, ips, "client."+rawZone, 0, rawUpdate(updates, "client"))
	lat := &v1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lat"},
		Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: "op"}, Name: "lat", Type: "A",
			TTL: ptr.To[v1.TTL](60), Values: []string{"192.0.2.250"}},
	}
	testkit.Must(t, c.Create(ctx, lat))
	waitA(ctx, t, ips[0], "lat."+opZone, "192.0.2.250", "primary")
	token := metricsReaderToken(ctx, t)
	editsBefore := managerTimes(ctx, t, token)
	opTimes := readProcessTimesAt(t)
	metricsBefore := apiServerMetrics(ctx, t)
	opRequests := apiServerRequests(metricsBefore, "")
	heapBefore := readAPIServerHeap(metricsBefore)
	// The edits take 17–30 s: the profile covers most of them.
	profiledEdits := profileAPIServer(ctx, t, "edits", 15*time.Second)
	profiledLeaderEdits := profileLeaderCPU(ctx, t, "edits", 15*time.Second)
	editLat := func(i int, value string) {
		// A patch, as kubectl apply sends: the operator's status writes
		// keep moving the resourceVersion.
		patch := client.MergeFrom(lat.DeepCopy())
		lat.Spec.Values = []string{value}
		if err := c.Patch(ctx, lat, patch); err != nil {
			t.Fatalf("DNSRecord edit %d: %v", i, err)
		}
	}
	opLat := benchLatency(ctx, t, ips, "lat."+opZone, 0, editLat)
	opTimes = append(opTimes, readProcessTimesAt(t)...)
	metricsAfter := apiServerMetrics(ctx, t)
	opRequests = apiServerRequests(metricsAfter, "").minus(opRequests)
	heapAfter := readAPIServerHeap(metricsAfter)
	profiledEdits()
	profiledLeaderEdits()
	var diskSamples []diskSample
	if disk != nil {
		diskSamples = disk.finish(t)
	}
	var cpuSamples []cpuSample
	if cpu != nil {
		cpuSamples = cpu.finish(t)
	}
	editsThrottled := throttlingSummary(throttledBefore, operatorThrottling(ctx, t), leaderPod(ctx, t).Name)
	rows = append(rows,
		benchRow{"the cluster", "the data volume, an emptyDir on every pod (no claims); named's resources, from the authoritative sample",
			fmt.Sprintf("medium %s, sizeLimit %s; requests cpu %s, memory %s; limit memory %s", medium, sizeLimit, resources.Requests.Cpu(), resources.Requests.Memory(), resources.Limits.Memory()), ""},
	)
	rows = append(rows, rawLat.pathRows("raw: signed UPDATE to the primary pod", "UPDATE", "changes", "baseline")...)
	rows = append(rows, benchRow{"raw: signed with the zone's update key", "… each record judged by the agent (owned sets)", guardedLat.served.summary(), guardedLat.p50Over(rawLat)})
	rows = append(rows, opLat.pathRows("operator: DNSRecord edit via the API server", "PATCH", "edits", opLat.p50Over(rawLat))...)
	rows = append(rows,
		benchRow{"", "… inside the operator's leader (the DNSRecord controller's workqueue_queue_duration_seconds and controller_runtime_reconcile_time_seconds)",
			reconcileSummary(leaderTimes(ctx, t, managerTimes(ctx, t, token), editsBefore)), ""},
		benchRow{"the node's disk during the edits", fmt.Sprintf("a 4 KiB write and fsync every %s beside the cluster's volumes and etcd", diskProbeEvery),
			diskSummary(diskSamples, []string{"raw", "update key", "DNSRecord"}, []changeLatencies{rawLat, guardedLat, opLat}), ""},
		benchRow{"the node's CPUs during the edits", fmt.Sprintf("the kernel's CPU pressure (%s, some: a runnable task waited for a CPU) every %s", cpuPressureFile, cpuProbeEvery),
			cpuSummary(cpuSamples, []string{"raw", "update key", "DNSRecord"}, []changeLatencies{rawLat, guardedLat, opLat}), ""},
		benchRow{"the node's CPU time at rest", fmt.Sprintf("every process's time on a CPU and waiting for one (/proc/<pid>/task/*/schedstat), the top %d, in CPUs; the cluster up, nothing probed, polled or changed", cpuTimeTop),
			cpuTimeSummary(restTimes[0], restTimes[1], cpuTimeTop), ""},
		benchRow{"… during the raw changes", "", cpuTimeSummary(rawTimes[0], rawTimes[1], cpuTimeTop), ""},
		benchRow{"… during the DNSRecord edits", "", cpuTimeSummary(opTimes[0], opTimes[1], cpuTimeTop), ""},
		benchRow{"the API server during the DNSRecord edits", "requests per edit, every client's (apiserver_request_total), the most frequent first",
			opRequests.perObject(benchChanges), ""},
		benchRow{"", "… its mean times (apiserver_request_duration_seconds, …_admission_webhook_…, etcd_request_duration_seconds)",
			apiServerTimes(metricsAfter).minus(apiServerTimes(metricsBefore)).editString(), ""},
		benchRow{"", "… its Go heap and watch cache (go_memstats_heap_inuse_bytes, go_gc_duration_seconds, watch_cache_capacity)",
			heapSummary(heapBefore, heapAfter), ""},
		benchRow{"the manager's CPU limit during the edits", "CFS periods (100 ms) in which the manager used up its quota and was stopped (its container's cpu.stat)", editsThrottled, ""},
		benchRow{"fallback without NOTIFY", "SOA refresh of the seed", fmt.Sprintf("%d s", render.SeedRefresh), ""},
	)

	var pacedEdits changeLatencies
	if every := *benchPacedEvery; every > 0 {
		rawPaced := benchLatency(ctx, t, ips, "lat."+rawZone, every, rawUpdate(transfer, "lat"))
		pacedTimes := readProcessTimesAt(t)
		pacedEdits = benchLatency(ctx, t, ips, "lat."+opZone, every, editLat)
		pacedTimes = append(pacedTimes, readProcessTimesAt(t)...)
		rows = append(rows, rawPaced.pathRows(fmt.Sprintf("raw, paced: one signed UPDATE every %s", every), "UPDATE", "changes", "baseline")...)
		rows = append(rows, pacedEdits.pathRows(fmt.Sprintf("operator, paced: one DNSRecord edit every %s", every), "PATCH", "edits", pacedEdits.p50Over(rawPaced))...)
		rows = append(rows, benchRow{"… during the paced DNSRecord edits", "", cpuTimeSummary(pacedTimes[0], pacedTimes[1], cpuTimeTop), ""})
	} else {
		rows = append(rows, benchRow{"raw and operator, paced", "the same changes started at a fixed interval", "not measured (-bench-paced-every)", ""})
	}

	// Where the slowest changes waited, from named's own log lines.
	pods := []string{a.Name + "-0", a.Name + "-1", a.Name + "-2"}
	if tl := timelines(ctx, t, ns, pods, rawZone, rawLat, 2); tl != "" {
		t.Logf("raw changes served in over %s, as named logged them:\n%s", editGoal, tl)
	}
	if tl := timelines(ctx, t, ns, pods, opZone, opLat, 3); tl != "" {
		t.Logf("DNSRecord edits served in over %s, as named logged them:\n%s", editGoal, tl)
	}

	policyLat, unrolled := benchPolicyEdits(ctx, t, c, ns, a.Name, opZone)
	rolls := "no roll"
	if !unrolled {
		rolls = "ROLLED the resolver"
		t.Errorf("BindPolicy rule edits rolled the resolver; rules are data and must not")
	}
	rows = append(rows, benchRow{"operator: BindPolicy rule edit via the API server", fmt.Sprintf("edit → enforced by both resolver pods (%d edits)", policyEdits), policyLat.summary(), rolls})

	rawBulk := benchRawBulk(ctx, t, ips, rawZone, transfer)
	// The heap profile is taken 20 s into the creates, near the peak.
	profiled := profileLeader(ctx, t, fmt.Sprintf("records-%d", benchRecords), 20*time.Second)
	profiledAPIServer := profileAPIServer(ctx, t, fmt.Sprintf("records-%d", benchRecords), 20*time.Second)
	opBulk := benchOperatorBulk(ctx, t, c, own, token, ns, ips, []bulkZone{{"op", opZone}}, transfer)
	profiled()
	profiledAPIServer()
	rate := func(d time.Duration) float64 { return benchRecords / d.Seconds() }
	rows = append(rows,
		benchRow{fmt.Sprintf("raw: %d signed UPDATEs of %d to the primary pod", benchRecords/benchBatch, benchBatch), fmt.Sprintf("%d records served by the primary", benchRecords),
			fmt.Sprintf("%s (%.0f rec/s)", rawBulk.primary.Round(time.Millisecond), rate(rawBulk.primary)), "baseline"},
		benchRow{"", "… and by every secondary", rawBulk.secondaries.Round(time.Millisecond).String(), ""},
	)
	rows = append(rows, opBulk.rows(fmt.Sprintf("operator: %d DNSRecord objects", benchRecords),
		fmt.Sprintf("%.1f%% of raw", 100*rate(opBulk.primary)/rate(rawBulk.primary)))...)
	op := operatorMemory(ctx, t)
	rows = append(rows,
		benchRow{"operator: the manager's memory", fmt.Sprintf("with %d DNSRecords in one zone, webhooks in-process", benchRecords+1), op.String(), "goal: peak ≤ 100 MiB"},
		benchRow{"named: the primary's memory", fmt.Sprintf("zones of %d records each", benchRecords), podProcessMemory(ctx, t, ns, a.Name+"-0", "named").String(), ""},
		benchRow{"named: a secondary's memory", "the same zones, transferred", podProcessMemory(ctx, t, ns, a.Name+"-1", "named").String(), ""},
		benchRow{"named: the data volume", "zone files, journals and keys on the primary / a secondary" + volumeNote,
			fmt.Sprintf("%.1f / %.1f MiB", mib(podDataUsage(ctx, t, ns, a.Name+"-0", "named", render.DefaultPaths().DataDir)), mib(podDataUsage(ctx, t, ns, a.Name+"-1", "named", render.DefaultPaths().DataDir))), ""},
	)
	printBenchTable(t, a.Replicas, rows)

	// Leave a quiet machine to the tests that follow: 10,000 DNSRecords
	// would otherwise keep the operator busy with their drift checks.
	deleteThrottledBefore := operatorThrottling(ctx, t)
	start := time.Now()
	profiledDelete := profileLeader(ctx, t, fmt.Sprintf("records-%d-delete", benchRecords), 20*time.Second)
	testkit.Must(t, deleteBulk(ctx, c, ns))
	testkit.Must(t, c.Delete(ctx, lat))
	answered := time.Since(start)
	// DNSRecords carry no finalizer: the objects are gone once their
	// DELETEs are answered, and deleting them is done when the primary
	// serves none of their data (what the finalizer's removal waited for
	// before), then every secondary.
	serial := waitRecordsGone(ctx, t, ips[0], opZone, transfer, 3*time.Minute)
	deleted := time.Since(start)
	for i, ip := range ips[1:] {
		waitSerial(ctx, t, ip, opZone, fmt.Sprintf("secondary %d", i+1), serial)
	}
	deletedEverywhere := time.Since(start)
	profiledDelete()
	t.Logf("cleanup: %d DNSRecords deleted: the DELETE requests were answered in %s, the primary served none of their data after %s, every secondary after %s; the managers' CPU limit meanwhile: %s",
		benchRecords, answered.Round(time.Millisecond), deleted.Round(time.Millisecond), deletedEverywhere.Round(time.Millisecond), throttlingSummary(deleteThrottledBefore, operatorThrottling(ctx, t), leaderPod(ctx, t).Name))
	printBenchGoals(t, []benchGoal{
		{"DNSRecords reach every secondary at ≥ 80% of the rate the API server and webhooks admit them",
			fmt.Sprintf("%.1f%% (admitted in %s, on every secondary %s)", 100*opBulk.created.Seconds()/opBulk.secondaries.Seconds(), opBulk.created.Round(time.Millisecond), opBulk.secondaries.Round(time.Millisecond)),
			opBulk.created.Seconds() >= 0.8*opBulk.secondaries.Seconds()},
		{"deleting them takes ≤ 1.2× the creation time", fmt.Sprintf("%.2f× (%s)", deleted.Seconds()/opBulk.created.Seconds(), deleted.Round(time.Millisecond)),
			deleted.Seconds() <= 1.2*opBulk.created.Seconds()},
		{"API requests per DNSRecord ≤ 3", fmt.Sprintf("%.2f", opBulk.api.total()/benchRecords), opBulk.api.total() <= 3*benchRecords},
		{"DNSRecord edit → served on every secondary, p99 ≤ 50 ms (back to back)", editGoalMeasured(opLat, pacedEdits, *benchPacedEvery), opLat.served.p(99) <= editGoal},
		{"the manager's peak memory ≤ 100 MiB with 10,000 DNSRecords", fmt.Sprintf("%.0f MiB", mib(op.hwm)), op.hwm <= 100<<20},
	})
	testkit.Must(t, c.Delete(ctx, &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.Name}}))
}

// editGoalMeasured is item 3's figure: the back-to-back edits' p99, which
// the goal is judged on, and the paced edits' beside it when measured.
func editGoalMeasured(backToBack, paced changeLatencies, every time.Duration) string {
	s := backToBack.served.p(99).Round(100 * time.Microsecond).String()
	if len(paced.served) > 0 {
		s += fmt.Sprintf(" (paced, one every %s: %s)", every, paced.served.p(99).Round(100*time.Microsecond))
	}
	return s
}

type benchRow struct{ path, what, result, vs string }

// benchGoal is one of issue 15's targets and whether this run met it.
type benchGoal struct {
	goal, measured string
	met            bool
}

// printBenchGoals prints the summary `make bench` ends with. The goals are
// reported, not asserted: timings on a shared 2-core machine are not
// test verdicts.
func printBenchGoals(t *testing.T, goals []benchGoal) {
	var b strings.Builder
	b.WriteString("\n| goal (issue 15) | this run | met |\n|---|---|---|\n")
	met := 0
	for _, g := range goals {
		mark := "no"
		if g.met {
			mark, met = "yes", met+1
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", g.goal, g.measured, mark)
	}
	fmt.Fprintf(&b, "\nSummary: %d of %d goals met in this run.\n", met, len(goals))
	fmt.Fprintln(os.Stdout, b.String())
	t.Log(b.String())
}

// printBenchTable prints the rows as a markdown table on stdout, where
// `make bench` shows it, and in the test log.
func printBenchTable(t *testing.T, replicas int32, rows []benchRow) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| path (local cluster, %d replicas) | measured | result | vs |\n|---|---|---|---|\n", replicas)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.path, r.what, r.result, r.vs)
	}
	fmt.Fprintln(os.Stdout, b.String())
	t.Log(b.String())
}

// latencies are update → served durations.
type latencies []time.Duration

func (l latencies) p(q int) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	return s[(len(s)-1)*q/100]
}

func (l latencies) summary() string {
	return fmt.Sprintf("p50 %s, p99 %s, max %s", l.p(50).Round(100*time.Microsecond), l.p(99).Round(100*time.Microsecond), l.p(100).Round(100*time.Microsecond))
}

// changeLatencies are one path's changes, each measured from its start
// until: the change was answered (the UPDATE's reply, or the API server's
// to the PATCH), the primary served it, and every secondary served it.
// The first two say where the time of the last goes.
type changeLatencies struct {
	answered, primary, served latencies
	started                   []time.Time
}

// slowest lists the edits served in over editGoal, slowest first (at most
// five), each split into its stages: answered, primary, every secondary.
// The p99 of each stage alone does not say which stage made a slow edit
// slow.
func (c changeLatencies) slowest() string {
	idx := c.overGoal()
	if len(idx) == 0 {
		return "none"
	}
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	parts := make([]string, 0, 5)
	for _, i := range idx[:min(len(idx), 5)] {
		parts = append(parts, fmt.Sprintf("#%d %s (answered %s, primary %s)", i+1, ms(c.served[i]), ms(c.answered[i]), ms(c.primary[i])))
	}
	return fmt.Sprintf("%d: %s", len(idx), strings.Join(parts, "; "))
}

// overGoal are the indexes of the changes served in over editGoal,
// slowest first.
func (c changeLatencies) overGoal() []int {
	var idx []int
	for i, d := range c.served {
		if d > editGoal {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(c.served[b], c.served[a]) })
	return idx
}

// stages summarises answered and primary for the table.
func (c changeLatencies) stages(request string) string {
	q := func(l latencies) string {
		return fmt.Sprintf("p50 %s, p99 %s", l.p(50).Round(100*time.Microsecond), l.p(99).Round(100*time.Microsecond))
	}
	return fmt.Sprintf("%s answered %s; primary serves it %s", request, q(c.answered), q(c.primary))
}

// pathRows are a latency path's rows in the table: when its changes were
// served (against vs), their stages (request: what a change sends) and the
// ones served in over editGoal (what: how the path calls its changes).
func (c changeLatencies) pathRows(path, request, what, vs string) []benchRow {
	return []benchRow{
		{path, fmt.Sprintf("update → served on every secondary (%d changes)", benchChanges), c.served.summary(), vs},
		{"", "… of which", c.stages(request), ""},
		{"", fmt.Sprintf("… the %s served in over %s", what, editGoal), c.slowest(), ""},
	}
}

// p50Over is the table's "vs" for a path measured against base.
func (c changeLatencies) p50Over(base changeLatencies) string {
	return fmt.Sprintf("p50 +%s", (c.served.p(50) - base.served.p(50)).Round(100*time.Microsecond))
}

// benchLatency makes benchChanges changes to name's A record with change
// and measures each until every secondary (ips[1:]) answers the new value,
// noting when change returned and when the primary (ips[0]) answered it.
// With every 0 each change starts when the previous one is served (back
// to back); otherwise change i starts every·i after the first, or when
// change i-1 is served if that is later.
//
// The pollers are the bench's instrument and keep their load on the node
// small: one UDP socket per server for all the changes, and the
// secondaries asked only once the primary serves the value, as they
// cannot before (they transfer it from the primary).
func benchLatency(ctx context.Context, t *testing.T, ips []string, name string, every time.Duration, change func(i int, value string)) changeLatencies {
	t.Helper()
	servers := make([]*localcluster.Querier, len(ips))
	for j, ip := range ips {
		q, err := localcluster.DialQuerier(ip)
		testkit.Must(t, err)
		defer q.Close()
		servers[j] = q
	}
	var out changeLatencies
	first := time.Now()
	for i := range benchChanges {
		value := benchValue(i)
		time.Sleep(time.Until(first.Add(time.Duration(i) * every)))
		start := time.Now()
		out.started = append(out.started, start)
		change(i, value)
		out.answered = append(out.answered, time.Since(start))
		if err := pollA(ctx, servers[0], name, value, 30*time.Second); err != nil {
			t.Fatalf("change %d of %s not served by the primary: %v", i, name, err)
		}
		out.primary = append(out.primary, time.Since(start))
		var wg sync.WaitGroup
		secondaries := servers[1:]
		errs := make([]error, len(secondaries))
		took := make([]time.Duration, len(secondaries))
		for j, q := range secondaries {
			wg.Go(func() {
				errs[j] = pollA(ctx, q, name, value, 30*time.Second)
				took[j] = time.Since(start)
			})
		}
		wg.Wait()
		for j, err := range errs {
			if err != nil {
				t.Fatalf("change %d of %s not served by %s: %v", i, name, ips[j+1], err)
			}
		}
		out.served = append(out.served, slices.Max(took))
	}
	return out
}

// pollA queries server for name's A record every few milliseconds until the
// answer is exactly want, for at most limit.
func pollA(ctx context.Context, server *localcluster.Querier, name, want string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last := "no answer"
	for time.Now().Before(deadline) && ctx.Err() == nil {
		in, err := server.Query(name, dns.TypeA)
		if err != nil {
			last = err.Error()
		} else {
			got := aValues(in)
			if len(got) == 1 && got[0] == want {
				return nil
			}
			last = fmt.Sprintf("%s %v", dns.RcodeToString[in.Rcode], got)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("after %s the answer was %s, want %s", limit, last, want)
}

// bulk is how long a bulk load took to be served.
type bulk struct {
	created, primary, secondaries, ready time.Duration
	api                                  apiCounts // the operator's API requests for the resource, create → Ready
	times                                apiTimes  // the API server's latencies, create → Ready
	manager                              string    // the manager's own webhook and scheduler times, create → Ready
}

func benchValue(i int) string { return fmt.Sprintf("192.0.2.%d", i%250+1) }

// benchRawBulk sends benchRecords A records straight to the primary pod in
// signed UPDATEs of benchBatch over TCP, then waits for the secondaries.
func benchRawBulk(ctx context.Context, t *testing.T, ips []string, zone string, transfer tsigKey) bulk {
	t.Helper()
	start := time.Now()
	for i := 0; i < benchRecords; i += benchBatch {
		m := new(dns.Msg)
		m.SetUpdate(dns.Fqdn(zone))
		rrs := make([]dns.RR, 0, benchBatch)
		for j := i; j < i+benchBatch && j < benchRecords; j++ {
			rr, err := dns.NewRR(fmt.Sprintf("%s.%s. 60 IN A %s", bulkRecord(j), zone, benchValue(j)))
			testkit.Must(t, err)
			rrs = append(rrs, rr)
		}
		m.Insert(rrs)
		r, err := exchangeSigned("tcp", ips[0], m, transfer)
		if err != nil || r.Rcode != dns.RcodeSuccess {
			t.Fatalf("raw UPDATE of records %d..: err=%v reply=%v", i, err, r)
		}
	}
	var res bulk
	res.primary = time.Since(start)
	serial := waitRecords(ctx, t, ips[0], zone, transfer, benchRecords, time.Minute)
	for i, ip := range ips[1:] {
		waitSerial(ctx, t, ip, zone, fmt.Sprintf("secondary %d", i+1), serial)
	}
	res.secondaries = time.Since(start)
	return res
}

// benchClient is the benches' client: objects go in as fast as the API
// server takes them (the operator under test, not client-side
// throttling, must be the limit), and count, when not nil, counts its
// requests apart from the operator's.
func benchClient(t *testing.T, count *requestCounter) client.Client {
	t.Helper()
	cfg := env.Cluster.Config()
	cfg.QPS = -1
	if count != nil {
		count.wrap(cfg)
	}
	c, err := client.New(cfg, client.Options{Scheme: testkit.Scheme()})
	testkit.Must(t, err)
	return c
}

// bulkRecord is the name of the bulks' record i (the raw one's owner
// name, the operator one's object and owner name): the waits count the
// records named r….
func bulkRecord(i int) string { return fmt.Sprintf("r%05d", i) }

// deleteBulk deletes the bulk's DNSRecords in ns, one DELETE per record
// from 32 clients: a single deletecollection of 10,000 objects outlasts
// the API server's request timeout here.
func deleteBulk(ctx context.Context, c client.Client, ns string) error {
	return forEachRecord(ctx, benchRecords, func(i int) error {
		return client.IgnoreNotFound(c.Delete(ctx, &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bulkRecord(i)}}))
	})
}

// bulkZone is a BindZone the bulk creates records in: its object's name
// (the records' zoneRef) and the zone it serves.
type bulkZone struct{ ref, name string }

// benchOperatorBulk creates benchRecords DNSRecords through the API server
// (32 clients at once, as a GitOps tool applying a large folder would),
// record i in zones[i % len(zones)], and waits until named serves them
// all, then until they all report Ready.
func benchOperatorBulk(ctx context.Context, t *testing.T, c client.Client, own *requestCounter, token, ns string, ips []string, zones []bulkZone, transfer tsigKey) bulk {
	t.Helper()
	var res bulk
	fams := apiServerMetrics(ctx, t)
	apiBefore, ownBefore, timesBefore, managerBefore := apiServerRequests(fams, own.resource), own.snapshot(), apiServerTimes(fams), managerTimes(ctx, t, token)
	start := time.Now()
	err := forEachRecord(ctx, benchRecords, func(i int) error {
		r := &v1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bulkRecord(i)},
			Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: zones[i%len(zones)].ref}, Name: v1.RecordName(bulkRecord(i)), Type: "A",
				TTL: ptr.To[v1.TTL](60), Values: []string{benchValue(i)}},
		}
		if err := c.Create(ctx, r); err != nil {
			return fmt.Errorf("creating DNSRecord %s: %w", r.Name, err)
		}
		return nil
	})
	testkit.Must(t, err)
	res.created = time.Since(start)
	serials := make([]uint32, len(zones))
	for z, zone := range zones {
		serials[z] = waitRecords(ctx, t, ips[0], zone.name, transfer, recordsIn(z, len(zones)), 5*time.Minute)
	}
	res.primary = time.Since(start)
	for z, zone := range zones {
		for i, ip := range ips[1:] {
			waitSerial(ctx, t, ip, zone.name, fmt.Sprintf("secondary %d", i+1), serials[z])
		}
	}
	res.secondaries = time.Since(start)
	NewWithT(t).Eventually(func() (int, error) { return notReadyRecords(ctx, c, ns) }).
		WithContext(ctx).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(BeZero(), "DNSRecords not Ready")
	res.ready = time.Since(start)
	fams = apiServerMetrics(ctx, t)
	res.api = apiServerRequests(fams, own.resource).minus(apiBefore).minus(own.snapshot().minus(ownBefore))
	res.times = apiServerTimes(fams).minus(timesBefore)
	res.manager = managerTimesSummary(managerTimes(ctx, t, token), managerBefore, leaderPod(ctx, t).Name)
	return res
}

// recordsIn is how many of benchRecords records spread round-robin over
// zones land in zone z.
func recordsIn(z, zones int) int {
	n := benchRecords / zones
	if z < benchRecords%zones {
		n++
	}
	return n
}

// rows are the bulk's rows of the bench's table, under title; primaryVs
// compares the primary's rate with a baseline, if there is one.
func (b bulk) rows(title, primaryVs string) []benchRow {
	rate := func(d time.Duration, unit string) string {
		return fmt.Sprintf("%s (%.0f %s/s)", d.Round(time.Millisecond), benchRecords/d.Seconds(), unit)
	}
	return []benchRow{
		{title, "created through the API server and webhooks (32 clients)", rate(b.created, "obj"), ""},
		{"", fmt.Sprintf("%d records served by the primary (from the first create)", benchRecords), rate(b.primary, "rec"), primaryVs},
		{"", "… and by every secondary (issue 15 item 1: at ≥ 80% of the admitted rate)",
			fmt.Sprintf("%s (%.0f rec/s, %.1f%% of the admitted rate)", b.secondaries.Round(time.Millisecond), benchRecords/b.secondaries.Seconds(), 100*b.created.Seconds()/b.secondaries.Seconds()), ""},
		{"", "… and every DNSRecord reports Ready", b.ready.Round(time.Millisecond).String(), ""},
		{"", "API requests per DNSRecord, create → Ready (the API server's apiserver_request_total for dnsrecords, less the bench's own)",
			fmt.Sprintf("%.2f: %s", b.api.total()/benchRecords, b.api.perObject(benchRecords)), "goal ≤ 3"},
		{"", "mean times in the API server, create → Ready (apiserver_request_duration_seconds, …_admission_webhook_…, …_flowcontrol_request_wait_…)",
			b.times.String(), ""},
		{"", "… and inside the manager (controller_runtime_webhook_latency_seconds, go_sched_latencies_seconds, go_gc_duration_seconds, from each replica's metrics)",
			b.manager, ""},
	}
}

// notReadyRecords counts the DNSRecords of ns that are not Ready.
func notReadyRecords(ctx context.Context, c client.Reader, ns string) (int, error) {
	var l v1.DNSRecordList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return -1, err
	}
	n := 0
	for _, r := range l.Items {
		if !meta.IsStatusConditionTrue(r.Status.Conditions, v1.ConditionReady) {
			n++
		}
	}
	return n, nil
}

// forEachRecord calls f for 0..n-1 from 32 goroutines, as a GitOps tool
// applying a large folder would, and returns the first error.
func forEachRecord(ctx context.Context, n int, f func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	return ctx.Err()
}

// waitRecords transfers zone from server (signed with key) until it holds
// at least want A records named r*, and returns the serial that had them.
func waitRecords(ctx context.Context, t *testing.T, server, zone string, key tsigKey, want int, limit time.Duration) uint32 {
	t.Helper()
	return waitRecordCount(ctx, t, server, zone, key, limit, func(got int) error {
		if got < want {
			return fmt.Errorf("%d of %d records", got, want)
		}
		return nil
	})
}

// waitRecordsGone waits until server serves none of the bench's records
// in zone, and returns the zone's serial then.
func waitRecordsGone(ctx context.Context, t *testing.T, server, zone string, key tsigKey, limit time.Duration) uint32 {
	t.Helper()
	return waitRecordCount(ctx, t, server, zone, key, limit, func(got int) error {
		if got > 0 {
			return fmt.Errorf("%d records left", got)
		}
		return nil
	})
}

// waitRecordCount transfers zone from server until done accepts the
// number of the bench's records (A records named r…) it holds, and returns
// the zone's serial then.
func waitRecordCount(ctx context.Context, t *testing.T, server, zone string, key tsigKey, limit time.Duration, done func(got int) error) uint32 {
	t.Helper()
	var serial uint32
	NewWithT(t).Eventually(func() error {
		got := 0
		err := eachTransferred(server, zone, key, func(rr dns.RR) {
			switch rr := rr.(type) {
			case *dns.A:
				if strings.HasPrefix(rr.Hdr.Name, "r") {
					got++
				}
			case *dns.SOA:
				serial = rr.Serial
			}
		})
		if err != nil {
			return err
		}
		return done(got)
	}).WithContext(ctx).WithTimeout(limit).WithPolling(200*time.Millisecond).Should(Succeed(), "%s: the records of %s", server, zone)
	return serial
}
