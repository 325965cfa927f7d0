package agent_test

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// dashboardExprs returns every PromQL expression of the shipped Grafana
// dashboard: the panels' targets and the template variables' queries.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../config/monitoring/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query string `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			// label_values(<selector>, <label>): the selector is PromQL.
			q := strings.TrimSuffix(strings.TrimPrefix(v.Query, "label_values("), ")")
			if i := strings.LastIndexByte(q, ','); i >= 0 {
				q = q[:i]
			}
			out = append(out, q)
		}
	}
	return out
}

// TestDashboardQueriesExportedMetrics (issue 14 item 4): every metric the
// shipped dashboard queries is one a real agent exports, by the families a
// scrape announces (a histogram's _bucket, _sum and _count included); and
// so is every agent metric the shipped alerts read (issue 45 item 4;
// config/monitoring/prometheusrule.yaml; cmd checks the operator's).
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t, bindtest.Options{})
	ctx := ctxT(t)
	if _, err := e.client.EnsureZone(ctx, e.primary("", "dash.test", "")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		soa(t, e.named.DNSAddr, "dash.test")
	}
	m := new(dns.Msg)
	m.SetQuestion("missing.dash.test.", dns.TypeA)
	if _, _, err := new(dns.Client).Exchange(m, e.named.DNSAddr); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(e.metricsURL + "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	families := map[string]bool{}
	for line := range strings.SplitSeq(string(body), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			families[f[2]] = true
			if f[3] == "histogram" || f[3] == "summary" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					families[f[2]+s] = true
				}
			}
		}
	}
	used := map[string]bool{}
	for _, expr := range dashboardExprs(t) {
		names := testkit.MetricNames(expr)
		g.Expect(names).NotTo(BeEmpty(), "expression %q reads no metric", expr)
		for _, n := range names {
			used[n] = true
			g.Expect(families).To(HaveKey(n), "the dashboard queries %s (in %q), which no agent exports", n, expr)
		}
	}
	g.Expect(len(used)).To(BeNumerically(">=", 10), "the dashboard covers the agent's metrics: %v", used)
	t.Logf("the dashboard's %d metrics are all exported: %v", len(used), slices.Sorted(maps.Keys(used)))

	alerting := map[string]bool{}
	for _, r := range testkit.AlertRules(t) {
		names := testkit.MetricNames(r.Expr)
		g.Expect(names).NotTo(BeEmpty(), "alert %s reads no metric", r.Alert)
		for _, n := range names {
			if testkit.OperatorMetric(n) {
				continue
			}
			alerting[n] = true
			g.Expect(families).To(HaveKey(n), "alert %s reads %s, which no agent exports", r.Alert, n)
		}
	}
	g.Expect(alerting).NotTo(BeEmpty(), "the alerts read agent metrics")
	t.Logf("the alerts' %d agent metrics are all exported: %v", len(alerting), slices.Sorted(maps.Keys(alerting)))
}

// The expression reader finds metric names and nothing else.
func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (type) (rate(bind_incoming_queries_total{pod=~"a-[0-9]+", code!~"2.."}[5m]))`: {"bind_incoming_queries_total"},
		`histogram_quantile(0.99, sum by (le, endpoint) (rate(x_bucket[5m])))`:                {"x_bucket"},
		`min(bind_up{namespace=~"$namespace"}) or on (pod) vector(0) and other_metric`:        {"bind_up", "other_metric"},
		`bind_zone_serial`: {"bind_zone_serial"},
		`max by (namespace, zone) (label_replace(bind_zone_serial{type="primary"} offset 5m, "c", "$1", "pod", "(.+)-[0-9]+")) < on (zone) group_left () y`:    {"bind_zone_serial", "y"},
		`min by (pod) (expiry_seconds) - time() < 21 * 24 * 3600 and absent(a and on (job, instance) b) or histogram_quantile(0.99, rate(c_bucket[5m])) > 1e3`: {"expiry_seconds", "a", "b", "c_bucket"},
	} {
		NewWithT(t).Expect(testkit.MetricNames(expr)).To(Equal(want), expr)
	}
}
