package e2e

import (
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// apiServerHeap is the API server's Go heap and its DNSRecord watch cache
// at one moment, from its /metrics (apiServerMetrics). A watch cache that
// took a burst of writes keeps that many events (and their objects) until
// later writes let it shrink, so right after another bench's 30,000
// DNSRecord writes the API server had three to four times the heap, and
// the edits measured slower in two of three runs (docs/behaviours.md, "An
// API server that has just taken a burst"). This reading says which API
// server a run had.
type apiServerHeap struct {
	inUse    float64 // go_memstats_heap_inuse_bytes
	gcCycles float64 // go_gc_duration_seconds' count
	capacity float64 // watch_cache_capacity of dnsrecords (events)
}

func readAPIServerHeap(fams map[string]*dto.MetricFamily) apiServerHeap {
	var h apiServerHeap
	for _, m := range fams["go_memstats_heap_inuse_bytes"].GetMetric() {
		h.inUse = m.GetGauge().GetValue()
	}
	for _, m := range fams["go_gc_duration_seconds"].GetMetric() {
		h.gcCycles = float64(m.GetSummary().GetSampleCount())
	}
	// The cacher's metrics have a subsystem and no namespace: the name
	// has no apiserver_ prefix.
	for _, m := range fams["watch_cache_capacity"].GetMetric() {
		if strings.HasPrefix(metricLabels(m)["resource"], "dnsrecords") {
			h.capacity = m.GetGauge().GetValue()
		}
	}
	return h
}

// heapSummary says how the heap changed from before to after, and how many
// GC cycles ran between them.
func heapSummary(before, after apiServerHeap) string {
	return fmt.Sprintf("heap in use %.0f → %.0f MiB, %.0f GC cycles; the DNSRecord watch cache's capacity %.0f → %.0f events",
		mib(int64(before.inUse)), mib(int64(after.inUse)), after.gcCycles-before.gcCycles, before.capacity, after.capacity)
}
