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

var (
	descUp          = prometheus.NewDesc("bind_up", "1 when named's statistics channel answered with parseable JSON.", nil, nil)
	descScrape      = prometheus.NewDesc("bind_scrape_duration_seconds", "Time to fetch and parse named's statistics.", nil, nil)
	descBoot        = prometheus.NewDesc("bind_boot_time_seconds", "When named started (Unix time).", nil, nil)
	descConfig      = prometheus.NewDesc("bind_config_time_seconds", "When named last loaded its configuration (Unix time).", nil, nil)
	descQueries     = prometheus.NewDesc("bind_incoming_queries_total", "Incoming queries by query type.", []string{"type"}, nil)
	descRcodes      = prometheus.NewDesc("bind_responses_total", "Responses sent by rcode.", []string{"rcode"}, nil)
	descOpcodes     = prometheus.NewDesc("bind_incoming_requests_total", "Incoming requests by opcode.", []string{"opcode"}, nil)
	descNS          = prometheus.NewDesc("bind_server_counter_total", "named's server statistics (nsstats) by counter name.", []string{"counter"}, nil)
	descZoneMaint   = prometheus.NewDesc("bind_zone_maintenance_total", "named's zone maintenance statistics (zonestats) by counter name.", []string{"counter"}, nil)
	descSerial      = prometheus.NewDesc("bind_zone_serial", "SOA serial of each zone named serves.", []string{"view", "zone", "type"}, nil)
	descXfrOut      = prometheus.NewDesc("bind_transfers_out_total", "Zone transfers served to secondaries (nsstats XfrReqDone).", nil, nil)
	descXfrRej      = prometheus.NewDesc("bind_transfers_out_rejected_total", "Zone transfer requests refused (nsstats XfrRej).", nil, nil)
	descXfrInOK     = prometheus.NewDesc("bind_transfers_in_success_total", "Zone transfers received successfully (zonestats XfrSuccess).", nil, nil)
	descXfrInFail   = prometheus.NewDesc("bind_transfers_in_failed_total", "Zone transfers that failed (zonestats XfrFail).", nil, nil)
	descNotifyIn    = prometheus.NewDesc("bind_notify_in_total", "NOTIFY messages received (opcode NOTIFY).", nil, nil)
	descUpdates     = prometheus.NewDesc("bind_updates_total", "Dynamic updates by outcome (nsstats UpdateDone, UpdateRej, UpdateFail...).", []string{"result"}, nil)
	allDescs        = []*prometheus.Desc{descUp, descScrape, descBoot, descConfig, descQueries, descRcodes, descOpcodes, descNS, descZoneMaint, descSerial, descXfrOut, descXfrRej, descXfrInOK, descXfrInFail, descNotifyIn, descUpdates}
	updateCounters  = map[string]string{"UpdateDone": "done", "UpdateRej": "rejected", "UpdateFail": "failed", "UpdateBadPrereq": "bad_prereq", "UpdateReqFwd": "forwarded"}
	errTooLarge     = errors.New("statistics larger than the limit")
	errNotStatistic = errors.New("not a BIND JSON statistics document")
)

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
	for _, d := range allDescs {
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
			Zones []json.RawMessage `json:"zones"`
		}
		if json.Unmarshal(r.Views[v], &view) != nil {
			continue
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
	each := func(m map[string]float64, d *prometheus.Desc) {
		for k, v := range m {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, k)
		}
	}
	each(s.QTypes, descQueries)
	each(s.Rcodes, descRcodes)
	each(s.Opcodes, descOpcodes)
	each(s.NSStats, descNS)
	each(s.ZoneStats, descZoneMaint)
	// Transfers and updates under their own names: the counters exist
	// only once non-zero, so absent means 0.
	ch <- prometheus.MustNewConstMetric(descXfrOut, prometheus.CounterValue, s.NSStats["XfrReqDone"])
	ch <- prometheus.MustNewConstMetric(descXfrRej, prometheus.CounterValue, s.NSStats["XfrRej"])
	ch <- prometheus.MustNewConstMetric(descXfrInOK, prometheus.CounterValue, s.ZoneStats["XfrSuccess"])
	ch <- prometheus.MustNewConstMetric(descXfrInFail, prometheus.CounterValue, s.ZoneStats["XfrFail"])
	ch <- prometheus.MustNewConstMetric(descNotifyIn, prometheus.CounterValue, s.Opcodes["NOTIFY"])
	for name, label := range updateCounters {
		ch <- prometheus.MustNewConstMetric(descUpdates, prometheus.CounterValue, s.NSStats[name], label)
	}
	for _, z := range s.Zones {
		ch <- prometheus.MustNewConstMetric(descSerial, prometheus.GaugeValue, z.Serial, z.View, z.Name, z.Type)
	}
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
