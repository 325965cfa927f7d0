package agent_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// scrape returns /metrics as name{labels} → value.
func (e *env) scrape(t testing.TB) map[string]float64 {
	t.Helper()
	resp, err := http.Get(e.metricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// After a few queries, /metrics shows them by type and rcode, the zone's
// serial, and the agent's own request counters.
func TestMetrics(t *testing.T) {
	e := startEnv(t, bindtest.Options{})
	ctx := ctxT(t)
	if _, err := e.client.EnsureZone(ctx, e.primary("", "metrics.test", "")); err != nil {
		t.Fatal(err)
	}
	const n = 7
	for i := 0; i < n; i++ {
		soa(t, e.named.DNSAddr, "metrics.test")
	}
	m := new(dns.Msg)
	m.SetQuestion("metrics.test.", dns.TypeAAAA)
	if _, _, err := new(dns.Client).Exchange(m, e.named.DNSAddr); err != nil {
		t.Fatal(err)
	}
	got := e.scrape(t)
	checks := map[string]func(float64) bool{
		`bind_up`: func(v float64) bool { return v == 1 },
		`bind_incoming_queries_total{type="SOA"}`:                                   func(v float64) bool { return v >= n },
		`bind_incoming_queries_total{type="AAAA"}`:                                  func(v float64) bool { return v >= 1 },
		`bind_response_rcodes_total{rcode="NOERROR"}`:                               func(v float64) bool { return v >= n+1 },
		`bind_responses_total{result="Success"}`:                                    func(v float64) bool { return v >= n },
		`bind_zone_serial{type="primary",view="_default",zone_name="metrics.test"}`: func(v float64) bool { return v == 1 },
		`bind_transfers_out_total`:                                                  func(v float64) bool { return v == 0 },
		`bind_agent_requests_total{code="200",endpoint="ensure"}`:                   func(v float64) bool { return v == 1 },
		`bind_agent_zone_operations_total{action="added"}`:                          func(v float64) bool { return v == 1 },
		`bind_agent_expected_zones`:                                                 func(v float64) bool { return v == 1 },
	}
	for k, ok := range checks {
		v, present := got[k]
		if !present || !ok(v) {
			t.Errorf("%s = %v (present %v)", k, v, present)
		}
	}
	if _, ok := got[`bind_agent_request_duration_seconds_count{endpoint="ensure"}`]; !ok {
		t.Error("no latency histogram")
	}
}
