package e2e

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// What the operator costs besides time (issue 15 items 1 and 4): API
// requests per DNSRecord, read from the API server's own counters, and
// the memory of the manager and of named, read from /proc on this node.

// apiCounts are the API server's apiserver_request_total for one resource,
// by "VERB" or "VERB subresource".
type apiCounts map[string]float64

// apiServerRequests reads resource's counts from fams (apiServerMetrics);
// resource "" reads every resource's, by "resource VERB [subresource]".
func apiServerRequests(fams map[string]*dto.MetricFamily, resource string) apiCounts {
	out := apiCounts{}
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		l := metricLabels(m)
		k := l["verb"]
		switch {
		case resource == "":
			k = cmp.Or(l["resource"], "(no resource)") + " " + k
		case l["resource"] != resource:
			continue
		}
		if sr := l["subresource"]; sr != "" {
			k += " " + sr
		}
		out[k] += m.GetCounter().GetValue()
	}
	return out
}

// apiTimes are sums and counts of the API server's latency histograms
// that say where a DNSRecord's time goes in it, by a short name.
type apiTimes map[string]struct{ sum, count float64 }

// apiServerTimes reads from fams (apiServerMetrics), for DNSRecords: the
// creates (POST), edits (PATCH) and status writes (PATCH status) as the API
// server timed them, the DNSRecord webhook's admission of creates and of
// updates, etcd's updates of DNSRecords, and how long requests of
// ServiceAccounts (the manager's writes, without a FlowSchema of their
// own) waited in API Priority and Fairness before they ran.
func apiServerTimes(fams map[string]*dto.MetricFamily) apiTimes {
	out := apiTimes{}
	add := func(key string, h *dto.Histogram) {
		v := out[key]
		v.sum += h.GetSampleSum()
		v.count += float64(h.GetSampleCount())
		out[key] = v
	}
	for _, m := range fams["apiserver_request_duration_seconds"].GetMetric() {
		l := metricLabels(m)
		switch {
		case l["resource"] != "dnsrecords" || l["dry_run"] != "":
		case l["verb"] == "POST" && l["subresource"] == "":
			add("POST", m.GetHistogram())
		case l["verb"] == "PATCH" && l["subresource"] == "status":
			add("PATCH status", m.GetHistogram())
		case l["verb"] == "PATCH" && l["subresource"] == "":
			add("PATCH", m.GetHistogram())
		}
	}
	for _, m := range fams["apiserver_admission_webhook_admission_duration_seconds"].GetMetric() {
		l := metricLabels(m)
		switch {
		case !strings.HasPrefix(l["name"], "mdnsrecord"):
		case l["operation"] == "CREATE":
			add("webhook", m.GetHistogram())
		case l["operation"] == "UPDATE":
			add("webhook UPDATE", m.GetHistogram())
		}
	}
	for _, m := range fams["etcd_request_duration_seconds"].GetMetric() {
		if l := metricLabels(m); l["resource"] == "dnsrecords" && l["operation"] == "update" {
			add("etcd update", m.GetHistogram())
		}
	}
	for _, m := range fams["apiserver_flowcontrol_request_wait_duration_seconds"].GetMetric() {
		if l := metricLabels(m); l["flow_schema"] == "service-accounts" && l["execute"] == "true" {
			add("queued", m.GetHistogram())
		}
	}
	return out
}

// minus is a − b by key.
func (a apiTimes) minus(b apiTimes) apiTimes {
	out := apiTimes{}
	for k, v := range a {
		out[k] = struct{ sum, count float64 }{v.sum - b[k].sum, v.count - b[k].count}
	}
	return out
}

// dnsRecordController is the DNSRecord controller's name in the
// manager's metrics (controller-runtime names it after the kind).
const dnsRecordController = "dnsrecord"

// Where addHistogram splits off the slow samples: a bucket bound of each
// histogram. The workqueue's buckets grow tenfold (10 ms, 100 ms), so a
// wait counts as slow above 100 ms; controller-runtime's reconcile
// histogram has a 50 ms bound, issue 15's whole edit p99, so one slow
// reconcile shows even when it alone does not reach 100 ms.
const (
	slowQueue     = 0.1
	slowReconcile = 0.05
)

// addHistogram adds h under key, and the samples above slowAfter (one of
// h's bucket bounds) under key+" slow" (count only).
func (a apiTimes) addHistogram(key string, h *dto.Histogram, slowAfter float64) {
	v := a[key]
	v.sum += h.GetSampleSum()
	v.count += float64(h.GetSampleCount())
	a[key] = v
	fast := 0.0
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == slowAfter {
			fast = float64(b.GetCumulativeCount())
		}
	}
	slow := a[key+" slow"]
	slow.count += float64(h.GetSampleCount()) - fast
	a[key+" slow"] = slow
}

// reconcileSummary is the table's text for the DNSRecord controller's
// queue and reconcile times in d (after − before, one pod).
func reconcileSummary(d apiTimes) string {
	// A queue wait is microseconds when the key is idle; mean's 100 µs
	// rounding would print it as 0.
	mean := func(key string) time.Duration {
		if d[key].count <= 0 {
			return 0
		}
		return time.Duration(d[key].sum / d[key].count * float64(time.Second)).Round(time.Microsecond)
	}
	seconds := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return fmt.Sprintf("queued %s on average (%.0f of %.0f over %s), reconciled in %s (%.0f over %s)",
		mean("queue"), d["queue slow"].count, d["queue"].count, seconds(slowQueue), mean("reconcile"), d["reconcile slow"].count, seconds(slowReconcile))
}

// mean is key's mean duration, or 0 without samples.
func (a apiTimes) mean(key string) time.Duration {
	if a[key].count <= 0 {
		return 0
	}
	return time.Duration(a[key].sum / a[key].count * float64(time.Second)).Round(100 * time.Microsecond)
}

// String is the table's summary.
func (a apiTimes) String() string {
	return fmt.Sprintf("create %s (of which the webhook %s); the manager's status write %s (of which queued in API Priority and Fairness, any ServiceAccount's request: %s)",
		a.mean("POST"), a.mean("webhook"), a.mean("PATCH status"), a.mean("queued"))
}

// editString is the table's summary for edits: where the API server's
// time for an edit's PATCH and the manager's status write goes.
func (a apiTimes) editString() string {
	return fmt.Sprintf("the edit's PATCH %s (of which the webhook %s); the manager's status write %s; etcd's update of a DNSRecord %s",
		a.mean("PATCH"), a.mean("webhook UPDATE"), a.mean("PATCH status"), a.mean("etcd update"))
}

// apiServerMetrics are the API server's metrics now, by family name.
func apiServerMetrics(ctx context.Context, t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	raw, err := env.Cluster.Client().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	testkit.Must(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	testkit.Must(t, err)
	return fams
}

// metricLabels are a sample's labels by name.
func metricLabels(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// minus is a − b by key.
func (a apiCounts) minus(b apiCounts) apiCounts {
	out := apiCounts{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out[k] = -v
		}
	}
	return out
}

func (a apiCounts) total() float64 {
	var n float64
	for _, v := range a {
		n += v
	}
	return n
}

// perObject is the counts divided by n, largest first, for the table.
func (a apiCounts) perObject(n int) string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int {
		if a[x] != a[y] {
			if a[x] > a[y] {
				return -1
			}
			return 1
		}
		return strings.Compare(x, y)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, a[k]/float64(n)))
	}
	return strings.Join(parts, ", ")
}

// requestCounter counts a client's own requests for one resource, by
// "VERB" as the API server names them (its list and watch GETs apart), so
// the bench can take them out of the API server's counts.
type requestCounter struct {
	resource string
	n        [8]atomic.Int64 // by verb, counterVerbs' index
}

var counterVerbs = []string{"POST", "GET", "LIST", "WATCH", "PUT", "PATCH", "DELETE", "DELETECOLLECTION"}

func (c *requestCounter) wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if _, rest, ok := strings.Cut(r.URL.Path, "/"+c.resource); ok {
				verb := r.Method
				switch {
				case verb != http.MethodGet:
				case r.URL.Query().Get("watch") == "true":
					verb = "WATCH"
				case rest == "": // the collection, not one object
					verb = "LIST"
				}
				if i := slices.Index(counterVerbs, verb); i >= 0 {
					c.n[i].Add(1)
				}
			}
			return rt.RoundTrip(r)
		})
	})
}

func (c *requestCounter) snapshot() apiCounts {
	out := apiCounts{}
	for i, v := range counterVerbs {
		if n := c.n[i].Load(); n != 0 {
			out[v] = float64(n)
		}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// memory is a process's resident set now and at its peak, from /proc,
// and what the resident set is now: anonymous memory (the Go heap and
// stacks) and pages of the executable file.
type memory struct{ rss, hwm, anon, file int64 } // bytes

// mib is bytes in MiB, for the tables.
func mib(b int64) float64 { return float64(b) / (1 << 20) }

func (m memory) String() string {
	return fmt.Sprintf("%.0f MiB now (%.0f MiB heap and stacks, %.0f MiB of the executable), peak %.0f MiB", mib(m.rss), mib(m.anon), mib(m.file), mib(m.hwm))
}

func procMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		field := map[string]*int64{"VmRSS": &m.rss, "VmHWM": &m.hwm, "RssAnon": &m.anon, "RssFile": &m.file}[k]
		if !ok || field == nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status %s: %w", pid, k, err)
		}
		*field = kb << 10
	}
	return m, nil
}

// podProcessMemory is the memory of the process named comm in a pod.
func podProcessMemory(ctx context.Context, t *testing.T, namespace, pod, comm string) memory {
	t.Helper()
	m, err := procMemory(podProcess(ctx, t, namespace, pod, comm).pid)
	testkit.Must(t, err)
	return m
}

// podDataUsage is the space the files under dir take (st_blocks), as the
// process named comm in a pod sees them: with the data volume in memory,
// what the zone files, journals and keys add to the pod's memory.
func podDataUsage(ctx context.Context, t *testing.T, namespace, pod, comm, dir string) int64 {
	t.Helper()
	var used int64
	root := fmt.Sprintf("/proc/%d/root%s", podProcess(ctx, t, namespace, pod, comm).pid, dir)
	testkit.Must(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			used += st.Blocks * 512
		}
		return nil
	}))
	return used
}

// operatorMemory is the memory of the operator's manager (the leader's,
// when several run: the one that did the work).
func operatorMemory(ctx context.Context, t *testing.T) memory {
	t.Helper()
	var top memory
	for _, pid := range managerPIDs(ctx, t) {
		m, err := procMemory(pid)
		testkit.Must(t, err)
		if m.hwm > top.hwm {
			top = m
		}
	}
	return top
}

// managerPIDs are the host PIDs of the manager in each running operator
// pod, by pod name.
func managerPIDs(ctx context.Context, t *testing.T) map[string]int {
	t.Helper()
	pods, err := env.OperatorPods(ctx)
	testkit.Must(t, err)
	out := map[string]int{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		procs := podProcesses(string(p.UID))
		i := slices.IndexFunc(procs, func(hp hostProcess) bool { return hp.comm == "bind-operator" })
		if i < 0 {
			t.Fatalf("no bind-operator process in pod %s/%s on this node", p.Namespace, p.Name)
		}
		out[p.Name] = procs[i].pid
	}
	return out
}

// benchMetricsReader is the ServiceAccount that reads the manager's
// metrics for the bench, bound to the metrics-reader ClusterRole the
// overlays ship (as a Prometheus would be).
const benchMetricsReader = "bench-metrics-reader"

// metricsReaderToken is a token of a ServiceAccount bound to the
// metrics-reader ClusterRole the overlays ship, as a Prometheus would
// hold; the account and its binding are deleted when the test ends.
func metricsReaderToken(ctx context.Context, t *testing.T) string {
	t.Helper()
	cs := env.Cluster.Client()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: benchMetricsReader}}
	_, err := cs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{})
	testkit.Must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = cs.RbacV1().ClusterRoleBindings().Delete(ctx, benchMetricsReader, metav1.DeleteOptions{})
		_ = cs.CoreV1().ServiceAccounts(sa.Namespace).Delete(ctx, sa.Name, metav1.DeleteOptions{})
	})
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: benchMetricsReader},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "bind-operator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	testkit.Must(t, err)
	tr, err := cs.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](1800)}}, metav1.CreateOptions{})
	testkit.Must(t, err)
	return tr.Status.Token
}

// managerTimes reads, from each operator pod's metrics endpoint (with a
// metricsReaderToken), the DNSRecord webhook's own time
// (controller_runtime_webhook_latency_seconds: decode, default, validate,
// answer), how long the Go scheduler kept runnable goroutines waiting
// (go_sched_latencies_seconds), the collector's pauses, and the DNSRecord
// controller's queue and reconcile times, by pod name. With the API
// server's figures they say whether a slow admission or edit is spent in
// the manager or before and after it.
func managerTimes(ctx context.Context, t *testing.T, token string) map[string]apiTimes {
	t.Helper()
	out := map[string]apiTimes{}
	for pod, fams := range managerMetrics(ctx, t, token) {
		times := apiTimes{}
		for _, m := range fams["controller_runtime_webhook_latency_seconds"].GetMetric() {
			if strings.HasSuffix(metricLabels(m)["webhook"], "-dnsrecord") {
				times["webhook"] = struct{ sum, count float64 }{m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())}
			}
		}
		for _, m := range fams["go_sched_latencies_seconds"].GetMetric() {
			times["sched"] = struct{ sum, count float64 }{m.GetHistogram().GetSampleSum(), float64(m.GetHistogram().GetSampleCount())}
		}
		// Where a DNSRecord's event waits inside the manager: in the
		// controller's queue (its key busy with an earlier reconcile), then
		// in the reconcile (the UPDATE's lane, the status write).
		for _, m := range fams["workqueue_queue_duration_seconds"].GetMetric() {
			if metricLabels(m)["name"] == dnsRecordController {
				times.addHistogram("queue", m.GetHistogram(), slowQueue)
			}
		}
		for _, m := range fams["controller_runtime_reconcile_time_seconds"].GetMetric() {
			if metricLabels(m)["controller"] == dnsRecordController {
				times.addHistogram("reconcile", m.GetHistogram(), slowReconcile)
			}
		}
		// The collector's stop-the-world pauses: a pause freezes every
		// goroutine, webhooks included.
		for _, m := range fams["go_gc_duration_seconds"].GetMetric() {
			times["gc"] = struct{ sum, count float64 }{m.GetSummary().GetSampleSum(), float64(m.GetSummary().GetSampleCount())}
			for _, q := range m.GetSummary().GetQuantile() {
				if q.GetQuantile() == 1 {
					times["gc max"] = struct{ sum, count float64 }{q.GetValue(), 1}
				}
			}
		}
		out[pod] = times
	}
	return out
}

// managerMetrics scrapes every manager pod's /metrics, as a Prometheus
// holding token would, and returns the metric families by pod name.
func managerMetrics(ctx context.Context, t *testing.T, token string) map[string]map[string]*dto.MetricFamily {
	t.Helper()
	pods, err := env.OperatorPods(ctx)
	testkit.Must(t, err)
	// The metrics server serves the webhooks' certificate, which names the
	// metrics Service: it is verified against the Secret's ca.crt by that
	// name, as the shipped ServiceMonitor has Prometheus do.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: operatorMetricsTLS(ctx, t)}}
	defer hc.CloseIdleConnections()
	out := map[string]map[string]*dto.MetricFamily{}
	for _, p := range pods {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !localcluster.IsTestHost(ip) {
			t.Fatalf("operator pod %s has address %q, outside the test network", p.Name, p.Status.PodIP)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(ip.String(), "8443")+"/metrics", nil)
		testkit.Must(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		testkit.Must(t, err)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("metrics of %s: %s", p.Name, resp.Status)
		}
		testkit.Must(t, err)
		out[p.Name] = fams
	}
	return out
}

// reconcileCounts is how many reconciles each controller of one manager
// process has run (controller_runtime_reconcile_total, every result), by
// controller name.
type reconcileCounts struct {
	pod    string // the leader's pod
	start  string // when its manager container started: counters restart with it
	counts map[string]float64
}

// leaderReconciles reads the leader's reconcileCounts.
func leaderReconciles(ctx context.Context, t *testing.T, token string) reconcileCounts {
	t.Helper()
	leader := leaderPod(ctx, t)
	fams, ok := managerMetrics(ctx, t, token)[leader.Name]
	if !ok {
		t.Fatalf("no metrics scraped from the leader %s", leader.Name)
	}
	out := reconcileCounts{pod: leader.Name, counts: map[string]float64{}}
	for _, cs := range leader.Status.ContainerStatuses {
		if cs.State.Running != nil {
			out.start += cs.Name + "@" + cs.State.Running.StartedAt.String() + " "
		}
	}
	for _, m := range fams["controller_runtime_reconcile_total"].GetMetric() {
		out.counts[metricLabels(m)["controller"]] += m.GetCounter().GetValue()
	}
	return out
}

// managerTimesSummary is the table's text for after − before: each pod's
// mean webhook time (and requests served) and scheduler latency, the
// leader named.
func managerTimesSummary(after, before map[string]apiTimes, leader string) string {
	names := make([]string, 0, len(after))
	for n := range after {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		d := after[n].minus(before[n])
		role := "other replica"
		if n == leader {
			role = "leader"
		}
		parts = append(parts, fmt.Sprintf("%s: webhook %s over %.0f requests, goroutines waited %s to run, %.0f GC pauses of %s (the longest of its last 256: %s)",
			role, d.mean("webhook"), d["webhook"].count, d.mean("sched"), d["gc"].count, d.mean("gc"), after[n].mean("gc max")))
	}
	return strings.Join(parts, "; ")
}

// leaderTimes is the leader's after − before of managerTimes.
func leaderTimes(ctx context.Context, t *testing.T, after, before map[string]apiTimes) apiTimes {
	t.Helper()
	leader := leaderPod(ctx, t).Name
	return after[leader].minus(before[leader])
}

// operatorMetricsTLS trusts the CA in the operator's certificate Secret
// and expects the metrics Service's name, as the ServiceMonitor's
// tlsConfig does.
func operatorMetricsTLS(ctx context.Context, t *testing.T) *tls.Config {
	t.Helper()
	var secret corev1.Secret
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: "webhook-server-cert"}, &secret))
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		t.Fatalf("Secret %s/webhook-server-cert has no CA certificate in ca.crt", OperatorNamespace)
	}
	return &tls.Config{RootCAs: pool, ServerName: "bind-operator-controller-manager-metrics-service." + OperatorNamespace + ".svc", MinVersion: tls.VersionTLS12}
}
