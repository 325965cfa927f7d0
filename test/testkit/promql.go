package testkit

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var (
	promStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchers  = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promGrouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promNumbers   = regexp.MustCompile(`\b[0-9][0-9a-zA-Z_.]*`)
	promOperators = []string{"and", "or", "unless", "bool", "offset", "group_left", "group_right", "on", "ignoring", "by", "without"}
)

// MetricNames are the metric names a PromQL expression reads: identifiers
// that are neither functions nor aggregations (followed by "("), nor
// label names (in matchers or by/without/on/ignoring), nor operators,
// nor numbers and durations.
func MetricNames(expr string) []string {
	e := promStrings.ReplaceAllString(expr, `""`)
	e = promMatchers.ReplaceAllString(e, " ")
	e = promGrouping.ReplaceAllString(e, " ")
	e = promNumbers.ReplaceAllString(e, " ")
	var out []string
	for _, m := range promIdent.FindAllStringSubmatch(e, -1) {
		if m[1] != "" || slices.Contains(promOperators, m[0]) {
			continue
		}
		out = append(out, m[0])
	}
	return out
}

// AlertRule is one alert of the shipped PrometheusRule.
type AlertRule struct {
	Group       string            `json:"-"`
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// PrometheusRulePath is the shipped PrometheusRule (kustomize; the chart
// copies it).
func PrometheusRulePath() string {
	return filepath.Join(RepoRoot(), "config", "monitoring", "prometheusrule.yaml")
}

// RuleGroups returns the spec.groups of the shipped PrometheusRule as
// promtool's rule file: a document with "groups" at the top.
func RuleGroups(tb testing.TB) []byte {
	tb.Helper()
	raw, err := os.ReadFile(PrometheusRulePath())
	Must(tb, err)
	var obj struct {
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	Must(tb, yaml.Unmarshal(raw, &obj))
	out, err := yaml.Marshal(map[string]any{"groups": obj.Spec.Groups})
	Must(tb, err)
	return out
}

// AlertRules returns every alert of the shipped PrometheusRule.
func AlertRules(tb testing.TB) []AlertRule {
	tb.Helper()
	var file struct {
		Groups []struct {
			Name  string      `json:"name"`
			Rules []AlertRule `json:"rules"`
		} `json:"groups"`
	}
	Must(tb, yaml.Unmarshal(RuleGroups(tb), &file))
	var out []AlertRule
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				tb.Fatalf("group %s has a rule that is not an alert: %q", g.Name, r.Expr)
			}
			r.Group = g.Name
			out = append(out, r)
		}
	}
	return out
}

// OperatorMetric tells which exporter a metric the alerts read comes
// from: true for the operator's (bind_operator_* and controller-runtime's,
// checked against the manager's registry by cmd), false for an agent's
// (every other bind_*, checked against a real agent by test/agent).
func OperatorMetric(name string) bool {
	return strings.HasPrefix(name, "bind_operator_") || !strings.HasPrefix(name, "bind_")
}
