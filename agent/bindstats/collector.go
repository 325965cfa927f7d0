// Package bindstats turns named's JSON statistics channel (BIND 9.18,
// json-stats-version 1.x, http://127.0.0.1:8053/json/v1) into Prometheus
// metrics, scraped on every collect.
//
// The input is treated as untrusted: bounded time, bounded body, bounded
// numbers of series, label values checked, missing or mistyped fields
// skipped rather than fatal. Verified against named 9.18.49: top-level
// "opcodes", "rcodes", "qtypes", "nsstats", "zonestats" (present once a
// zone maintenance counter is non-zero), "boot-time", and per view
// "zones": [{name, class, serial, type, loaded}].
package bindstats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults and bounds.
const (
	DefaultTimeout = 5 * time.Second
	// DefaultMaxBody: ~300 bytes per zone in the JSON; 64 MiB is >100k zones.
	DefaultMaxBody = 64 << 20
	// MaxZones bounds the per-zone series one scrape exports.
	MaxZones = 100_000
	// maxCounters bounds series per counter map (qtypes, nsstats, ...).
	maxCounters = 512
	// maxViews bounds the views whose resolver statistics are exported.
	maxViews    = 64
	maxLabelLen = 255
)

// Options configure a Collector.
type Options struct {
	URL     string
	Timeout time.Duration // per scrape; default DefaultTimeout
	MaxBody int64         // default DefaultMaxBody
	Client  *http.Client  // default: a client without proxies or redirects
}

// Collector scrapes named's statistics on each Collect.
type Collector struct {
	opts Options
	http *http.Client
}

// The series, named and labelled as prometheus-community/bind_exporter
// names them wherever both export the same thing, so that its dashboards
// (Grafana 1666) and the alerts users already have work unchanged;
// docs/monitoring.md has the mapping. Every label value is a category
// (an rcode, a query type, a view), never the name of another metric.
var (
	descUp       = prometheus.NewDesc("bind_up", "1 when named's statistics channel answered with parseable JSON.", nil, nil)
	descScrape   = prometheus.NewDesc("bind_scrape_duration_seconds", "Time to fetch and parse named's statistics.", nil, nil)
	descBoot     = prometheus.NewDesc("bind_boot_time_seconds", "Start time of the BIND process since unix epoch in seconds.", nil, nil)
	descConfig   = prometheus.NewDesc("bind_config_time_seconds", "Time of the last reconfiguration since unix epoch in seconds.", nil, nil)
	descQueries  = prometheus.NewDesc("bind_incoming_queries_total", "Number of incoming DNS queries, by query type.", []string{"type"}, nil)
	descOpcodes  = prometheus.NewDesc("bind_incoming_requests_total", "Number of incoming DNS requests, by opcode.", []string{"opcode"}, nil)
	descRcodes   = prometheus.NewDesc("bind_response_rcodes_total", "Number of responses sent, by RCODE.", []string{"rcode"}, nil)
	descResults  = prometheus.NewDesc("bind_responses_total", "Number of responses sent, by result (nsstats Qry*: Success, Referral, Nxrrset, SERVFAIL, FORMERR, NXDOMAIN).", []string{"result"}, nil)
	descQryErr   = prometheus.NewDesc("bind_query_errors_total", "Number of query failures, by error (nsstats QryDropped, QryFailure).", []string{"error"}, nil)
	descSerial   = prometheus.NewDesc("bind_zone_serial", "SOA serial of each zone named serves (type: primary, secondary, ...).", []string{"view", "zone_name", "type"}, nil)
	descXfrOut   = prometheus.NewDesc("bind_transfers_out_total", "Zone transfers served to secondaries (nsstats XfrReqDone).", nil, nil)
	descNotifyIn = prometheus.NewDesc("bind_notify_in_total", "NOTIFY messages received (opcode NOTIFY).", nil, nil)
	descUpdates  = prometheus.NewDesc("bind_updates_total", "Dynamic updates by outcome (nsstats UpdateDone, UpdateRej, UpdateFail...).", []string{"result"}, nil)

	// Resolver statistics, per view, as bind_exporter names them.
	descResQueries  = prometheus.NewDesc("bind_resolver_queries_total", "Number of outgoing DNS queries, by query type.", []string{"view", "type"}, nil)
	descResCache    = prometheus.NewDesc("bind_resolver_cache_rrsets", "Number of RRsets in the cache database, by type.", []string{"view", "type"}, nil)
	descResQryErr   = prometheus.NewDesc("bind_resolver_query_errors_total", "Number of resolver queries failed, by error (QueryAbort, QuerySockFail, QueryTimeout).", []string{"view", "error"}, nil)
	descResRespErr  = prometheus.NewDesc("bind_resolver_response_errors_total", "Number of resolver response errors received, by error (NXDOMAIN, SERVFAIL, FORMERR, OtherError, REFUSED).", []string{"view", "error"}, nil)
	descResValOK    = prometheus.NewDesc("bind_resolver_dnssec_validation_success_total", "Number of DNSSEC validation attempts succeeded, by result (ValOk, ValNegOk).", []string{"view", "result"}, nil)
	descResDuration = prometheus.NewDesc("bind_resolver_query_duration_seconds", "Resolver query round-trip time in seconds.", []string{"view"}, nil)
	descCacheHits   = prometheus.NewDesc("bind_resolver_cache_hits_total", "Cache lookups that found data (cachestats CacheHits).", []string{"view"}, nil)
	descCacheMisses = prometheus.NewDesc("bind_resolver_cache_misses_total", "Cache lookups that found none (cachestats CacheMisses).", []string{"view"}, nil)

	// nsstats and zonestats counters each with a series of its own.
	serverCounters = []namedCounter{
		{"nsstats", "QryDuplicate", prometheus.NewDesc("bind_query_duplicates_total", "Number of duplicated queries received.", nil, nil), prometheus.CounterValue},
		{"nsstats", "QryRecursion", prometheus.NewDesc("bind_query_recursions_total", "Number of queries causing recursion.", nil, nil), prometheus.CounterValue},
		{"nsstats", "XfrRej", prometheus.NewDesc("bind_zone_transfer_rejected_total", "Number of rejected zone transfers.", nil, nil), prometheus.CounterValue},
		{"nsstats", "RecursClients", prometheus.NewDesc("bind_recursive_clients", "Number of current recursive clients.", nil, nil), prometheus.GaugeValue},
		{"nsstats", "RPZRewrites", prometheus.NewDesc("bind_response_policy_zone_rewrites_total", "Number of response policy zone rewrites.", nil, nil), prometheus.CounterValue},
		{"zonestats", "XfrSuccess", prometheus.NewDesc("bind_zone_transfer_success_total", "Number of successful zone transfers (this server as a secondary).", nil, nil), prometheus.CounterValue},
		{"zonestats", "XfrFail", prometheus.NewDesc("bind_zone_transfer_failure_total", "Number of failed zone transfers (this server as a secondary).", nil, nil), prometheus.CounterValue},
	}
	// resolver stats counters each with a series of its own, per view.
	resolverCounters = []namedCounter{
		{"resolver", "Lame", prometheus.NewDesc("bind_resolver_response_lame_total", "Number of lame delegation responses received.", []string{"view"}, nil), prometheus.CounterValue},
		{"resolver", "EDNS0Fail", prometheus.NewDesc("bind_resolver_query_edns0_errors_total", "Number of EDNS(0) query errors.", []string{"view"}, nil), prometheus.CounterValue},
		{"resolver", "Mismatch", prometheus.NewDesc("bind_resolver_response_mismatch_total", "Number of mismatch responses received.", []string{"view"}, nil), prometheus.CounterValue},
		{"resolver", "Retry", prometheus.NewDesc("bind_resolver_query_retries_total", "Number of resolver query retries.", []string{"view"}, nil), prometheus.CounterValue},
		{"resolver", "Truncated", prometheus.NewDesc("bind_resolver_response_truncated_total", "Number of truncated responses received.", []string{"view"}, nil), prometheus.CounterValue},
		{"resolver", "ValFail", prometheus.NewDesc("bind_resolver_dnssec_validation_errors_total", "Number of DNSSEC validation attempt errors.", []string{"view"}, nil), prometheus.CounterValue},
	}
	// Counters that share one series, the counter's category as a label.
	responseResults  = []string{"QrySuccess", "QryReferral", "QryNxrrset", "QrySERVFAIL", "QryFORMERR", "QryNXDOMAIN"}
	queryErrors      = []string{"QryDropped", "QryFailure"}
	resolverQryErrs  = []string{"QueryAbort", "QuerySockFail", "QueryTimeout"}
	resolverRespErrs = []string{"NXDOMAIN", "SERVFAIL", "FORMERR", "OtherError", "REFUSED"}
	resolverValOK    = []string{"ValOk", "ValNegOk"}
	updateCounters   = map[string]string{"UpdateDone": "done", "UpdateRej": "rejected", "UpdateFail": "failed", "UpdateBadPrereq": "bad_prereq", "UpdateReqFwd": "forwarded"}

	// rttBuckets are named's resolver round-trip counters, QryRTT<ms>,
	// and the upper bound each counts to, in seconds; QryRTT1600+ is the
	// rest.
	rttBuckets = []struct {
		counter string
		le      float64
	}{{"QryRTT10", 0.01}, {"QryRTT100", 0.1}, {"QryRTT500", 0.5}, {"QryRTT800", 0.8}, {"QryRTT1600", 1.6}}

	errTooLarge     = errors.New("statistics larger than the limit")
	errNotStatistic = errors.New("not a BIND JSON statistics document")
)

// namedCounter is one named statistics counter exported as a series of
// its own.
type namedCounter struct {
	group, name string
	desc        *prometheus.Desc
	kind        prometheus.ValueType
}

// allDescs are every descriptor the collector may send.
func allDescs() []*prometheus.Desc {
	d := []*prometheus.Desc{descUp, descScrape, descBoot, descConfig, descQueries, descOpcodes, descRcodes, descResults, descQryErr, descSerial,
		descXfrOut, descNotifyIn, descUpdates, descResQueries, descResCache, descResQryErr, descResRespErr, descResValOK, descResDuration, descCacheHits, descCacheMisses}
	for _, c := range append(slices.Clone(serverCounters), resolverCounters...) {
		d = append(d, c.desc)
	}
	return d
}

// New returns a collector for opts.URL.
func New(opts Options) *Collector {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	c := opts.Client
	if c == nil {
		c = &http.Client{
			Transport: &http.Transport{Proxy: nil, DisableKeepAlives: false, MaxIdleConns: 1},
			// named never redirects; following one would leave loopback.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &Collector{opts: opts, http: c}
}

// Describe sends the fixed descriptors.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs() {
		ch <- d
	}
}

// Collect scrapes named once.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	st, err := c.Scrape(context.Background())
	ch <- prometheus.MustNewConstMetric(descScrape, prometheus.GaugeValue, time.Since(start).Seconds())
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, 1)
	st.emit(ch)
}

// Scrape fetches and parses the statistics.
func (c *Collector) Scrape(ctx context.Context) (*Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.opts.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("statistics channel: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxBody+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > c.opts.MaxBody {
		return nil, errTooLarge
	}
	return Parse(body)
}

// Stats is the subset of named's statistics the collector exports.
type Stats struct {
	BootTime, ConfigTime time.Time
	Opcodes, Rcodes      map[string]float64
	QTypes, NSStats      map[string]float64
	ZoneStats            map[string]float64
	Zones                []Zone
	// Resolvers are the views' resolver statistics, by view, for the
	// views that have any (named keeps them for every view; an
	// authoritative-only view's stay at zero).
	Resolvers map[string]Resolver
}

// Resolver is one view's resolver statistics.
type Resolver struct {
	Stats, QTypes, Cache, CacheStats map[string]float64
}

// Zone is one zone from a view's zone list.
type Zone struct {
	View, Name, Type string
	Serial           float64
}

// raw mirrors the JSON loosely: every value stays raw until checked.
type raw struct {
	Version    json.RawMessage            `json:"json-stats-version"`
	BootTime   json.RawMessage            `json:"boot-time"`
	ConfigTime json.RawMessage            `json:"config-time"`
	Opcodes    json.RawMessage            `json:"opcodes"`
	Rcodes     json.RawMessage            `json:"rcodes"`
	QTypes     json.RawMessage            `json:"qtypes"`
	NSStats    json.RawMessage            `json:"nsstats"`
	ZoneStats  json.RawMessage            `json:"zonestats"`
	Views      map[string]json.RawMessage `json:"views"`
}

// Parse reads a statistics document. Only a non-object document is an
// error; anything missing or malformed inside is skipped.
func Parse(body []byte) (*Stats, error) {
	var r raw
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotStatistic, err)
	}
	if r.Version == nil && r.Views == nil && r.NSStats == nil {
		return nil, errNotStatistic
	}
	s := &Stats{
		BootTime:   parseTime(r.BootTime),
		ConfigTime: parseTime(r.ConfigTime),
		Opcodes:    counters(r.Opcodes),
		Rcodes:     counters(r.Rcodes),
		QTypes:     counters(r.QTypes),
		NSStats:    counters(r.NSStats),
		ZoneStats:  counters(r.ZoneStats),
	}
	views := make([]string, 0, len(r.Views))
	for v := range r.Views {
		views = append(views, v)
	}
	slices.Sort(views) // deterministic truncation at MaxZones
	seen := map[[2]string]bool{}
	for _, v := range views {
		if v == "_bind" || !labelOK(v) { // _bind holds only the built-in CH zones
			continue
		}
		var view struct {
			Zones    []json.RawMessage `json:"zones"`
			Resolver struct {
				Stats      json.RawMessage `json:"stats"`
				QTypes     json.RawMessage `json:"qtypes"`
				Cache      json.RawMessage `json:"cache"`
				CacheStats json.RawMessage `json:"cachestats"`
			} `json:"resolver"`
		}
		if json.Unmarshal(r.Views[v], &view) != nil {
			continue
		}
		if res := view.Resolver; len(s.Resolvers) < maxViews && (res.Stats != nil || res.QTypes != nil || res.Cache != nil || res.CacheStats != nil) {
			if s.Resolvers == nil {
				s.Resolvers = map[string]Resolver{}
			}
			s.Resolvers[v] = Resolver{Stats: counters(res.Stats), QTypes: counters(res.QTypes), Cache: counters(res.Cache), CacheStats: counters(res.CacheStats)}
		}
		for _, zr := range view.Zones {
			if len(s.Zones) >= MaxZones {
				break
			}
			var z struct {
				Name   string          `json:"name"`
				Type   string          `json:"type"`
				Serial json.RawMessage `json:"serial"`
			}
			if json.Unmarshal(zr, &z) != nil || !labelOK(z.Name) || !labelOK(z.Type) {
				continue
			}
			serial, ok := number(z.Serial)
			if !ok || seen[[2]string{v, z.Name}] {
				continue
			}
			seen[[2]string{v, z.Name}] = true
			s.Zones = append(s.Zones, Zone{View: v, Name: z.Name, Type: z.Type, Serial: serial})
		}
	}
	return s, nil
}

func (s *Stats) emit(ch chan<- prometheus.Metric) {
	if !s.BootTime.IsZero() {
		ch <- prometheus.MustNewConstMetric(descBoot, prometheus.GaugeValue, float64(s.BootTime.Unix()))
	}
	if !s.ConfigTime.IsZero() {
		ch <- prometheus.MustNewConstMetric(descConfig, prometheus.GaugeValue, float64(s.ConfigTime.Unix()))
	}
	each := func(m map[string]float64, d *prometheus.Desc, labels ...string) {
		for k, v := range m {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, append(slices.Clone(labels), k)...)
		}
	}
	// named lists a counter only once it is non-zero: a category that is
	// absent is exported as 0, so that a rate over it exists from the
	// start and an alert on it can fire on its first increase.
	categories := func(m map[string]float64, names []string, d *prometheus.Desc, trim string, labels ...string) {
		for _, n := range names {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, m[n], append(slices.Clone(labels), strings.TrimPrefix(n, trim))...)
		}
	}
	each(s.QTypes, descQueries)
	each(s.Rcodes, descRcodes)
	each(s.Opcodes, descOpcodes)
	categories(s.NSStats, responseResults, descResults, "Qry")
	categories(s.NSStats, queryErrors, descQryErr, "Qry")
	groups := map[string]map[string]float64{"nsstats": s.NSStats, "zonestats": s.ZoneStats}
	for _, c := range serverCounters {
		ch <- prometheus.MustNewConstMetric(c.desc, c.kind, groups[c.group][c.name])
	}
	ch <- prometheus.MustNewConstMetric(descXfrOut, prometheus.CounterValue, s.NSStats["XfrReqDone"])
	ch <- prometheus.MustNewConstMetric(descNotifyIn, prometheus.CounterValue, s.Opcodes["NOTIFY"])
	for name, label := range updateCounters {
		ch <- prometheus.MustNewConstMetric(descUpdates, prometheus.CounterValue, s.NSStats[name], label)
	}
	for _, z := range s.Zones {
		ch <- prometheus.MustNewConstMetric(descSerial, prometheus.GaugeValue, z.Serial, z.View, z.Name, z.Type)
	}
	for view, r := range s.Resolvers {
		each(r.QTypes, descResQueries, view)
		for k, v := range r.Cache {
			ch <- prometheus.MustNewConstMetric(descResCache, prometheus.GaugeValue, v, view, k)
		}
		categories(r.Stats, resolverQryErrs, descResQryErr, "", view)
		categories(r.Stats, resolverRespErrs, descResRespErr, "", view)
		categories(r.Stats, resolverValOK, descResValOK, "", view)
		for _, c := range resolverCounters {
			ch <- prometheus.MustNewConstMetric(c.desc, c.kind, r.Stats[c.name], view)
		}
		ch <- prometheus.MustNewConstMetric(descCacheHits, prometheus.CounterValue, r.CacheStats["CacheHits"], view)
		ch <- prometheus.MustNewConstMetric(descCacheMisses, prometheus.CounterValue, r.CacheStats["CacheMisses"], view)
		ch <- rttHistogram(r.Stats, view)
	}
}

// rttHistogram is a view's resolver round-trip times as a histogram: named
// counts each query once, in the first QryRTT bucket its time falls in,
// so the cumulative counts are running sums.
func rttHistogram(stats map[string]float64, view string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(rttBuckets))
	var total uint64
	for _, b := range rttBuckets {
		total += uint64(stats[b.counter])
		buckets[b.le] = total
	}
	total += uint64(stats["QryRTT1600+"])
	return prometheus.MustNewConstHistogram(descResDuration, total, math.NaN(), buckets, view)
}

// counters reads a flat {"name": number} object, skipping entries whose
// name is not a sane label or whose value is not a finite non-negative
// number, and keeping at most maxCounters.
func counters(b json.RawMessage) map[string]float64 {
	out := map[string]float64{}
	if len(b) == 0 {
		return out
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return out
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if len(out) >= maxCounters {
			break
		}
		if v, ok := number(m[k]); ok && labelOK(k) {
			out[k] = v
		}
	}
	return out
}

func number(b json.RawMessage) (float64, bool) {
	var f float64
	if len(b) == 0 || json.Unmarshal(b, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, false
	}
	return f, true
}

func parseTime(b json.RawMessage) time.Time {
	var s string
	if json.Unmarshal(b, &s) != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// labelOK accepts printable ASCII label values of bounded length; anything
// else is dropped rather than exported.
func labelOK(s string) bool {
	if s == "" || len(s) > maxLabelLen {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r > '~' })
}
