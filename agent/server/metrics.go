package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// agentMetrics are the agent's own series (named's come from bindstats).
type agentMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	zoneOps  *prometheus.CounterVec
	ssu      *prometheus.CounterVec
	ready    prometheus.Gauge
}

// newAgentMetrics registers the agent's series; expected reports the
// number of expected zones at scrape time.
func newAgentMetrics(reg prometheus.Registerer, expected func() int) *agentMetrics {
	m := &agentMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bind_agent_requests_total",
			Help: "API requests by endpoint and HTTP status code.",
		}, []string{"endpoint", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bind_agent_request_duration_seconds",
			Help:    "API request latency by endpoint.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"endpoint"}),
		zoneOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bind_agent_zone_operations_total",
			Help: "Zone operations by outcome (added, modified, unchanged, deleted, absent, error).",
		}, []string{"action"}),
		ssu: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bind_agent_update_checks_total",
			Help: "Records of UPDATEs signed with a zone's update key that named asked the agent about, by verdict (granted, owned: the operator's record set, foreign-zone: the name is in a zone of the key's view that does not list the key, unknown-zone, invalid).",
		}, []string{"verdict"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "bind_agent_ready",
			Help: "1 when named answers DNS and every expected zone is loaded.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.zoneOps, m.ssu, m.ready,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "bind_agent_expected_zones",
			Help: "Zones ensured through the agent and not deleted.",
		}, func() float64 { return float64(expected()) }))
	return m
}
