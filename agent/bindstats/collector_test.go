package bindstats

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// testdata/named-9.18.49.json was captured from named 9.18.49 after three
// SOA queries, an AXFR and an NXDOMAIN query against one primary zone.
func TestParseRealNamed(t *testing.T) {
	b, err := os.ReadFile("testdata/named-9.18.49.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.QTypes["SOA"] != 3 || s.QTypes["AXFR"] != 1 || s.NSStats["XfrReqDone"] != 1 || s.Rcodes["NXDOMAIN"] != 1 {
		t.Fatalf("counters: qtypes %v nsstats %v", s.QTypes, s.NSStats)
	}
	if len(s.Zones) != 1 || s.Zones[0] != (Zone{View: "_default", Name: "a.test", Type: "primary", Serial: 5}) {
		t.Fatalf("zones: %+v", s.Zones)
	}
	if s.BootTime.IsZero() {
		t.Fatal("boot time")
	}
}

func serve(t *testing.T, body string, status int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestCollector(t *testing.T) {
	b, _ := os.ReadFile("testdata/named-9.18.49.json")
	c := New(Options{URL: serve(t, string(b), 200)})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	got := gather(t, reg)
	for k, v := range map[string]float64{
		"bind_up":                  1,
		"bind_transfers_out_total": 1,
		`bind_zone_serial{type="primary",view="_default",zone_name="a.test"}`:    5,
		`bind_incoming_queries_total{type="SOA"}`:                                3,
		`bind_response_rcodes_total{rcode="NXDOMAIN"}`:                           1,
		`bind_responses_total{result="NXDOMAIN"}`:                                1,
		`bind_responses_total{result="SERVFAIL"}`:                                0, // absent in named's output: 0, not missing
		`bind_zone_transfer_failure_total`:                                       0,
		`bind_resolver_query_retries_total{view="_default"}`:                     4,
		`bind_resolver_query_errors_total{error="QueryTimeout",view="_default"}`: 4,
		`bind_resolver_cache_misses_total{view="_default"}`:                      26,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// The series bind_exporter (prometheus-community) exports for what the
// agent exports too, with its labels (docs/monitoring.md): its dashboards
// and alerts read these. bind_zone_serial carries one label more, type,
// which leaves every bind_exporter query matching.
func TestBindExporterSeries(t *testing.T) {
	want := map[string][]string{
		"bind_up": nil, "bind_boot_time_seconds": nil, "bind_config_time_seconds": nil,
		"bind_incoming_queries_total": {"type"}, "bind_incoming_requests_total": {"opcode"},
		"bind_responses_total": {"result"}, "bind_response_rcodes_total": {"rcode"}, "bind_query_errors_total": {"error"},
		"bind_query_duplicates_total": nil, "bind_query_recursions_total": nil, "bind_recursive_clients": nil,
		"bind_response_policy_zone_rewrites_total": nil,
		"bind_zone_transfer_rejected_total":        nil, "bind_zone_transfer_success_total": nil, "bind_zone_transfer_failure_total": nil,
		"bind_zone_serial":            {"view", "zone_name", "type"},
		"bind_resolver_queries_total": {"view", "type"}, "bind_resolver_cache_rrsets": {"view", "type"},
		"bind_resolver_query_errors_total": {"view", "error"}, "bind_resolver_response_errors_total": {"view", "error"},
		"bind_resolver_dnssec_validation_success_total": {"view", "result"}, "bind_resolver_dnssec_validation_errors_total": {"view"},
		"bind_resolver_response_lame_total": {"view"}, "bind_resolver_query_edns0_errors_total": {"view"},
		"bind_resolver_response_mismatch_total": {"view"}, "bind_resolver_query_retries_total": {"view"},
		"bind_resolver_response_truncated_total": {"view"}, "bind_resolver_query_duration_seconds": {"view"},
	}
	got := map[string][]string{}
	for _, d := range allDescs() {
		// Desc has no accessors; its String is stable: fqName: "x", ... variableLabels: {a,b}
		str := d.String()
		name := between(str, `fqName: "`, `"`)
		if labels := between(str, "variableLabels: {", "}"); labels != "" {
			got[name] = strings.Split(labels, ",")
		} else {
			got[name] = nil
		}
	}
	for name, labels := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s is not exported", name)
			continue
		}
		if strings.Join(g, ",") != strings.Join(labels, ",") {
			t.Errorf("%s has labels %v, bind_exporter's are %v", name, g, labels)
		}
	}
	// No series names other series in a label.
	for name, labels := range got {
		for _, l := range labels {
			if l == "counter" || l == "name" || l == "metric" {
				t.Errorf("%s carries counter names in label %q: give each counter a series of its own", name, l)
			}
		}
	}
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	j := strings.Index(s, to)
	if j < 0 {
		return ""
	}
	return s[:j]
}

// gather returns every sample as name{label="value",...} → value, labels
// sorted by name as the registry sorts them.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			if len(m.GetLabel()) > 0 {
				var parts []string
				for _, l := range m.GetLabel() {
					parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
				}
				key += "{" + strings.Join(parts, ",") + "}"
			}
			out[key] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return 0
}

// Hostile or broken statistics never panic and never fail the whole
// scrape: bind_up says 0, or the bad parts are skipped.
func TestHostileStatistics(t *testing.T) {
	for name, body := range map[string]string{
		"not json":     `<html>`,
		"array":        `[1,2]`,
		"empty object": `{}`,
		"wrong types":  `{"json-stats-version":1,"qtypes":"x","rcodes":[1],"nsstats":{"A":"x","B":-1,"C":1e400},"views":{"v":{"zones":"x"},"w":{"zones":[1,{"name":7},{"name":"a","serial":"x"}]}}}`,
		"bad labels":   `{"json-stats-version":"1","qtypes":{"\u0000":1,"` + strings.Repeat("x", 300) + `":1,"ok":1},"views":{"_default":{"zones":[{"name":"a\nb","type":"primary","serial":1},{"name":"a","type":"primary","serial":1},{"name":"a","type":"primary","serial":2}]}}}`,
		"many keys":    `{"json-stats-version":"1","nsstats":{` + manyKeys(5000) + `}}`,
	} {
		t.Run(name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(New(Options{URL: serve(t, body, 200)}))
			if _, err := reg.Gather(); err != nil {
				t.Fatalf("gather: %v", err)
			}
		})
	}
	for name, url := range map[string]string{
		"500":         serve(t, `{}`, 500),
		"oversize":    serve(t, `{"json-stats-version":"`+strings.Repeat("x", 2048)+`"}`, 200),
		"unreachable": "http://127.0.0.1:1/json/v1",
		"bad url":     "::",
	} {
		t.Run(name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(New(Options{URL: url, MaxBody: 1024, Timeout: 2 * time.Second}))
			got := gather(t, reg)
			if v, ok := got["bind_up"]; !ok || v != 0 {
				t.Fatalf("bind_up = %v (%v)", v, ok)
			}
		})
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("a", i%50))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(`":1`)
	}
	return b.String()
}

// FuzzParse: no input panics the parser or produces metrics the registry
// rejects.
//
//	go test -fuzz FuzzParse -fuzztime 30s ./agent/bindstats/
func FuzzParse(f *testing.F) {
	b, _ := os.ReadFile("testdata/named-9.18.49.json")
	f.Add(b)
	f.Add([]byte(`{"views":{"v":{"zones":[{"name":"a","type":"t","serial":1}]}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := Parse(body)
		if err != nil {
			return
		}
		ch := make(chan prometheus.Metric, 1<<16)
		go func() { s.emit(ch); close(ch) }()
		for m := range ch {
			_ = m.Desc()
		}
	})
}

// A resolver view's round-trip counters become a cumulative histogram.
func TestResolverRTTHistogram(t *testing.T) {
	body := `{"json-stats-version":"1","views":{"inside":{"zones":[],"resolver":{"stats":{"QryRTT10":2,"QryRTT100":3,"QryRTT1600+":1}}}}}`
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(Options{URL: serve(t, body, 200)}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "bind_resolver_query_duration_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		got := map[float64]uint64{}
		for _, b := range h.GetBucket() {
			got[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		if h.GetSampleCount() != 6 || got[0.01] != 2 || got[0.1] != 5 || got[1.6] != 5 {
			t.Fatalf("histogram count %d, buckets %v", h.GetSampleCount(), got)
		}
		return
	}
	t.Fatal("no bind_resolver_query_duration_seconds")
}
