package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// secondaryBehind is the alert this test watches, and the windows of the
// shipped rule it shortens (see TestPrometheusAlertsOnAFrozenSecondary).
const (
	secondaryBehind        = "BindSecondaryZoneBehind"
	shippedBehindOffset    = "offset 5m"
	shippedBehindFor       = "10m"
	shortenedBehindOffset  = "offset 1m"
	shortenedBehindFor     = "1m"
	prometheusScrapeWindow = 30 * time.Second // the monitors' interval, and the Prometheus Operator's default evaluation interval
)

// TestPrometheusAlertsOnAFrozenSecondary (issue 45 item 6): a real
// Prometheus (bin/tools/prometheus, built from the Go module proxy by
// hack/build-tools.sh), configured from the installed chart's PodMonitor,
// ServiceMonitor and PrometheusRule as the Prometheus Operator would
// (promconfig_test.go), scrapes every agent and every operator replica on
// the node — the operator over HTTPS with the metrics-scraper account's
// token, verified against the operator's CA — and evaluates every shipped
// rule without error. When a secondary stops receiving transfers (its
// outgoing DNS dropped in its network namespace) and the zone changes on
// the primary, BindSecondaryZoneBehind fires for that pod and zone; when
// the secondary is let go, it catches up and the alert clears.
//
// The one change to the shipped rules: that alert's windows (the primary's
// serial 5 minutes before, for 10 minutes) are shortened to 1 minute each,
// so the test waits minutes, not a quarter of an hour; the expression,
// labels and every other rule are as shipped. promtool's unit tests
// (test/monitoring) prove the shipped windows.
func TestPrometheusAlertsOnAFrozenSecondary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-prometheus")
	a := authoritative{Namespace: ns, Name: "watched", Replicas: 2, Catalog: "catalog.watched.internal"}
	a.create(ctx, t)
	const zone = "watched.e2e.example"
	z := a.catalogZone("zone", zone, "", v1.RecordSet{Name: "app", Type: "A", Values: []string{"192.0.2.1"}})
	testkit.Must(t, env.Client.Create(ctx, z))
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })

	prom := startPrometheus(ctx, t)
	ips := a.servedByAll(ctx, t, zone)
	primary, secondary := a.Name+"-0", a.Name+"-1"

	// Every agent of the cluster and every operator replica is scraped.
	operators, err := env.OperatorPods(ctx)
	testkit.Must(t, err)
	prom.eventually(ctx, t, 3*time.Minute, "every target of the cluster and the operator up", func() error {
		up := map[string]bool{}
		for _, tg := range prom.targets(ctx) {
			if tg.Health == "up" {
				up[tg.Labels["namespace"]+"/"+tg.Labels["pod"]] = true
			}
		}
		var missing []string
		for _, p := range []string{ns + "/" + primary, ns + "/" + secondary} {
			if !up[p] {
				missing = append(missing, p)
			}
		}
		for _, p := range operators {
			if !up[p.Namespace+"/"+p.Name] {
				missing = append(missing, p.Namespace+"/"+p.Name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("not up: %v; targets: %s", missing, prom.describeTargets(ctx))
		}
		return nil
	})
	// The operator's series come through the ServiceMonitor's job.
	prom.eventually(ctx, t, 2*time.Minute, "the operator's build info scraped", func() error {
		if n := len(prom.query(ctx, t, `bind_operator_build_info{job=~".+-metrics-service"}`)); n < len(operators) {
			return fmt.Errorf("%d series of %d replicas", n, len(operators))
		}
		return nil
	})
	serials := fmt.Sprintf(`bind_zone_serial{namespace=%q, zone_name=%q}`, ns, zone)
	prom.eventually(ctx, t, 2*time.Minute, "both pods' serial of the zone scraped", func() error {
		if r := prom.query(ctx, t, serials); len(r) != 2 {
			return fmt.Errorf("%d series: %v", len(r), r)
		}
		return nil
	})
	// Every shipped rule evaluates against these series without error.
	prom.eventually(ctx, t, 2*time.Minute, "every rule evaluated", func() error { return prom.rulesHealthy(ctx, t) })

	// The secondary stops receiving: its SOA queries and transfers (DNS to
	// any address but its own) are dropped; the agent and the scrapes
	// still reach it.
	unfreeze := dropOutgoingDNS(ctx, t, ns, secondary)
	before := waitSOA(ctx, t, ips[0], zone, primary)
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(z), z))
	z.Spec.Records = append(z.Spec.Records, v1.RecordSet{Name: "changed", Type: "A", Values: []string{"192.0.2.2"}})
	testkit.Must(t, env.Client.Update(ctx, z))
	after := waitSerial(ctx, t, ips[0], zone, primary, before+1)
	frozenAt := time.Now()
	t.Logf("the primary serves serial %d, the frozen secondary %d", after, waitSOA(ctx, t, ips[1], zone, secondary))

	alert := func(state string) func() error {
		return func() error {
			for _, al := range prom.alerts(ctx, t) {
				l := al.Labels
				if l["alertname"] == secondaryBehind && l["namespace"] == ns && l["zone_name"] == zone {
					if l["pod"] != secondary {
						return fmt.Errorf("%s names pod %s, not the frozen %s: %v", secondaryBehind, l["pod"], secondary, l)
					}
					if state == "" || al.State == state {
						return nil
					}
					return fmt.Errorf("%s is %s", secondaryBehind, al.State)
				}
			}
			return fmt.Errorf("%s is not active", secondaryBehind)
		}
	}
	prom.eventually(ctx, t, 6*time.Minute, secondaryBehind+" firing", alert("firing"))
	t.Logf("%s fired %s after the change (windows: %s, for %s; scrape and evaluation every %s)",
		secondaryBehind, time.Since(frozenAt).Round(time.Second), shortenedBehindOffset, shortenedBehindFor, prometheusScrapeWindow)

	unfreeze()
	waitSerial(ctx, t, ips[1], zone, secondary, after)
	caughtUp := time.Now()
	prom.eventually(ctx, t, 4*time.Minute, secondaryBehind+" cleared", func() error {
		if alert("")() == nil {
			return fmt.Errorf("%s still active", secondaryBehind)
		}
		return nil
	})
	t.Logf("%s cleared %s after the secondary caught up", secondaryBehind, time.Since(caughtUp).Round(time.Second))
}

// dropOutgoingDNS drops every DNS packet pod sends to another address
// (nftables in the pod's network namespace, from the node) and returns
// the function that restores it; the test's cleanup restores it too.
func dropOutgoingDNS(ctx context.Context, t *testing.T, ns, pod string) func() {
	t.Helper()
	sandbox := podProcess(ctx, t, ns, pod, "pause").pid
	nft := func(stdin string, args ...string) error {
		cmd := exec.CommandContext(context.WithoutCancel(ctx), "nsenter", append([]string{"-t", strconv.Itoa(sandbox), "-n", "nft"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("nft %v in pod %s: %v: %s", args, pod, err, out)
		}
		return nil
	}
	testkit.Must(t, nft(`table inet e2e_prometheus {
  chain out { type filter hook output priority -300; policy accept; oif lo accept; meta l4proto { tcp, udp } th dport 53 drop; }
}
`, "-f", "-"))
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := nft("", "delete", "table", "inet", "e2e_prometheus"); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(restore)
	return restore
}

// prometheus is a running bin/tools/prometheus.
type prometheus struct {
	base string // http://127.0.0.1:port
	log  string // its log file
	hc   *http.Client
}

// startPrometheus applies the chart's scraper account (ServiceAccount,
// token Secret, binding to the metrics-reader ClusterRole), writes the
// configuration the Prometheus Operator would from the chart's monitors
// and rules, and starts Prometheus on loopback until the test ends.
func startPrometheus(ctx context.Context, t *testing.T) *prometheus {
	t.Helper()
	bin := filepath.Join(testkit.RepoRoot(), "bin", "tools", "prometheus")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("prometheus not found at %s: run `hack/build-tools.sh bin/tools prometheus` (make tools)", bin)
	}
	objs := chartMonitoring(ctx, t)

	var manifests []string
	for _, o := range objs.Others {
		b, err := yaml.Marshal(o.Object)
		testkit.Must(t, err)
		manifests = append(manifests, string(b))
	}
	all := strings.Join(manifests, "---\n")
	_, err := env.Kubectl(ctx, all, "apply", "--server-side", "--field-manager=e2e-prometheus", "-f", "-")
	testkit.Must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_, _ = env.Kubectl(ctx, all, "delete", "--ignore-not-found", "-f", "-")
	})

	dir := t.TempDir()
	// The token controller fills the scraper's Secret a moment after it
	// is created.
	var configs []map[string]any
	NewWithT(t).Eventually(func() (err error) {
		configs, err = scrapeConfigs(ctx, objs, env.Cluster.KubeconfigPath(), dir)
		return err
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "the monitors' Secrets")

	rules := shortenSecondaryBehind(t, objs.Rules)
	testkit.Must(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600))
	cfg, err := yaml.Marshal(map[string]any{
		"global": map[string]any{
			"scrape_interval":     prometheusScrapeWindow.String(),
			"evaluation_interval": prometheusScrapeWindow.String(),
		},
		"rule_files":     []string{filepath.Join(dir, "rules.yaml")},
		"scrape_configs": configs,
	})
	testkit.Must(t, err)
	testkit.Must(t, os.WriteFile(filepath.Join(dir, "prometheus.yaml"), cfg, 0o600))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	testkit.Must(t, err)
	addr := l.Addr().String()
	testkit.Must(t, l.Close())
	logFile := filepath.Join(dir, "prometheus.log")
	lf, err := os.Create(logFile)
	testkit.Must(t, err)
	cmd := exec.Command(bin,
		"--config.file="+filepath.Join(dir, "prometheus.yaml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = lf, lf
	testkit.Must(t, cmd.Start())
	p := &prometheus{base: "http://" + addr, log: logFile, hc: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = lf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("prometheus log:\n%s\nconfiguration:\n%s", tail(string(b), 6000), cfg)
		}
	})
	p.eventually(ctx, t, time.Minute, "Prometheus ready", func() error {
		resp, err := p.hc.Get(p.base + "/-/ready")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s", resp.Status)
		}
		return nil
	})
	return p
}

// shortenSecondaryBehind returns the rule file with the windows of
// secondaryBehind shortened, failing when the shipped rule no longer has
// the windows this test shortens.
func shortenSecondaryBehind(t *testing.T, rules []byte) []byte {
	t.Helper()
	var file struct {
		Groups []struct {
			Name     string           `json:"name"`
			Interval string           `json:"interval,omitempty"`
			Rules    []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	testkit.Must(t, yaml.UnmarshalStrict(rules, &file))
	found := false
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r["alert"] != secondaryBehind {
				continue
			}
			found = true
			expr, _ := r["expr"].(string)
			r["expr"] = hasOnce(t, expr, shippedBehindOffset, shortenedBehindOffset, secondaryBehind+" expr")
			if r["for"] != shippedBehindFor {
				t.Fatalf("%s: for is %v, want %s: update the test to the shipped rule", secondaryBehind, r["for"], shippedBehindFor)
			}
			r["for"] = shortenedBehindFor
		}
	}
	if !found {
		t.Fatalf("the chart's PrometheusRule has no %s", secondaryBehind)
	}
	out, err := yaml.Marshal(file)
	testkit.Must(t, err)
	return out
}

// eventually polls f every 2 seconds until it succeeds or timeout passes.
func (p *prometheus) eventually(ctx context.Context, t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	NewWithT(t).Eventually(f).WithContext(ctx).WithTimeout(timeout).WithPolling(2*time.Second).Should(Succeed(), "Prometheus: %s", what)
}

// api GETs one endpoint of Prometheus's HTTP API into data.
func (p *prometheus) api(ctx context.Context, path string, q url.Values, data any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("%s: %s: %v", path, resp.Status, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, resp.Status, body.Error)
	}
	return json.Unmarshal(body.Data, data)
}

type promTarget struct {
	ScrapePool string            `json:"scrapePool"`
	Labels     map[string]string `json:"labels"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
}

func (p *prometheus) targets(ctx context.Context) []promTarget {
	var data struct {
		Active []promTarget `json:"activeTargets"`
	}
	if err := p.api(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &data); err != nil {
		return nil
	}
	return data.Active
}

func (p *prometheus) describeTargets(ctx context.Context) string {
	var b strings.Builder
	for _, tg := range p.targets(ctx) {
		fmt.Fprintf(&b, "\n  %s %s/%s %s %s", tg.ScrapePool, tg.Labels["namespace"], tg.Labels["pod"], tg.Health, tg.LastError)
	}
	return b.String()
}

// query runs an instant query and returns each series' labels.
func (p *prometheus) query(ctx context.Context, t *testing.T, q string) []map[string]string {
	t.Helper()
	var data struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
		} `json:"result"`
	}
	testkit.Must(t, p.api(ctx, "/api/v1/query", url.Values{"query": {q}}, &data))
	out := make([]map[string]string, 0, len(data.Result))
	for _, r := range data.Result {
		out = append(out, r.Metric)
	}
	return out
}

type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

func (p *prometheus) alerts(ctx context.Context, t *testing.T) []promAlert {
	t.Helper()
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	testkit.Must(t, p.api(ctx, "/api/v1/alerts", nil, &data))
	return data.Alerts
}

// rulesHealthy is nil once every rule of the shipped groups has been
// evaluated, and without error.
func (p *prometheus) rulesHealthy(ctx context.Context, t *testing.T) error {
	t.Helper()
	var data struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	testkit.Must(t, p.api(ctx, "/api/v1/rules", nil, &data))
	n := 0
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				return fmt.Errorf("rule %s/%s: health %q %s", g.Name, r.Name, r.Health, r.LastError)
			}
		}
	}
	if want := len(testkit.AlertRules(t)); n != want {
		return fmt.Errorf("%d rules loaded, the shipped PrometheusRule has %d", n, want)
	}
	return nil
}
