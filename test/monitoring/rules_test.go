// Package monitoring_test tests the shipped alerts
// (config/monitoring/prometheusrule.yaml, issue 45 item 4) with the real
// promtool, built from the Go module proxy by `hack/build-tools.sh
// bin/tools promtool` (make test builds it with the other tools): `promtool
// check rules`, and `promtool test rules` over testdata, where each alert
// fires and clears. It checks too that every alert is tested both ways and
// has its runbook in docs/troubleshooting.md. Whether the metrics the
// alerts read exist is checked where they are exported: cmd (the
// operator's) and test/agent (the agents').
package monitoring_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// promtool returns the path of bin/tools/promtool, failing the test with
// the command that builds it when it is missing.
func promtool(t *testing.T) string {
	t.Helper()
	p := filepath.Join(testkit.RepoRoot(), "bin", "tools", "promtool")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("promtool not found at %s: run `hack/build-tools.sh bin/tools promtool` (builds it from the Go module proxy, about 5 minutes on two cores)", p)
	}
	return p
}

// ruleDir is a folder with the rules as promtool reads them (rules.yaml)
// and the unit tests of testdata beside them.
func ruleDir(t *testing.T) (dir string, tests []string) {
	t.Helper()
	dir = t.TempDir()
	testkit.Must(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), testkit.RuleGroups(t), 0o600))
	files, err := filepath.Glob("testdata/*.yaml")
	testkit.Must(t, err)
	if len(files) == 0 {
		t.Fatal("no rule tests in testdata")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		testkit.Must(t, err)
		out := filepath.Join(dir, filepath.Base(f))
		testkit.Must(t, os.WriteFile(out, b, 0o600))
		tests = append(tests, out)
	}
	return dir, tests
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
	t.Logf("%s %s (%s):\n%s", filepath.Base(name), args[0]+" "+args[1], time.Since(start).Round(time.Millisecond), out.String())
}

// TestPromtoolCheckAndTestRules: the rules pass `promtool check rules`
// (syntax, PromQL, templates; lint: duplicate rules) and every unit test
// of testdata passes `promtool test rules`.
func TestPromtoolCheckAndTestRules(t *testing.T) {
	p := promtool(t)
	dir, tests := ruleDir(t)
	run(t, p, "check", "rules", "--lint=all", "--lint-fatal", filepath.Join(dir, "rules.yaml"))
	run(t, p, append([]string{"test", "rules"}, tests...)...)
}

type ruleTestFile struct {
	Tests []struct {
		AlertRuleTest []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// TestEveryAlertFiresAndClears: for every alert some unit test expects it
// firing at one time and not firing at a later time of the same series,
// and no unit test names an alert the rules do not have.
func TestEveryAlertFiresAndClears(t *testing.T) {
	g := NewWithT(t)
	alerts := map[string]bool{}
	for _, r := range testkit.AlertRules(t) {
		alerts[r.Alert] = true
	}
	cleared := map[string]bool{}
	files, err := filepath.Glob("testdata/*.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range files {
		raw, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		var file ruleTestFile
		g.Expect(yaml.Unmarshal(raw, &file)).To(Succeed(), f)
		for _, tc := range file.Tests {
			fired := map[string]time.Duration{}
			for _, a := range tc.AlertRuleTest {
				g.Expect(alerts).To(HaveKey(a.Alertname), "%s tests an alert the rules do not have", f)
				at, err := parseDuration(a.EvalTime)
				g.Expect(err).NotTo(HaveOccurred())
				if len(a.ExpAlerts) > 0 {
					if first, ok := fired[a.Alertname]; !ok || at < first {
						fired[a.Alertname] = at
					}
				}
			}
			for _, a := range tc.AlertRuleTest {
				at, _ := parseDuration(a.EvalTime)
				if first, ok := fired[a.Alertname]; ok && len(a.ExpAlerts) == 0 && at > first {
					cleared[a.Alertname] = true
				}
			}
		}
	}
	for a := range alerts {
		g.Expect(cleared).To(HaveKey(a), "no unit test in testdata has %s fire and then clear", a)
	}
}

// parseDuration reads promtool's eval_time (a Prometheus duration: 1h30m,
// 2d).
func parseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := time.ParseDuration(d + "h")
		return n * 24, err
	}
	return time.ParseDuration(s)
}

// TestEveryAlertHasARunbook: every alert has a severity, a summary and a
// description, and its runbook_url is the anchor of its own entry under
// "## Alerts" in docs/troubleshooting.md; every entry there is an alert
// the rules have.
func TestEveryAlertHasARunbook(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "docs", "troubleshooting.md"))
	g.Expect(err).NotTo(HaveOccurred())
	_, section, ok := strings.Cut(string(raw), "\n## Alerts\n")
	g.Expect(ok).To(BeTrue(), "docs/troubleshooting.md has no \"## Alerts\" section")
	section, _, _ = strings.Cut(section, "\n## ")
	var entries []string
	for _, m := range regexp.MustCompile(`(?m)^### (\S+)\s*$`).FindAllStringSubmatch(section, -1) {
		entries = append(entries, m[1])
	}
	var names []string
	for _, r := range testkit.AlertRules(t) {
		names = append(names, r.Alert)
		g.Expect(r.Labels["severity"]).To(BeElementOf("warning", "critical"), "%s: severity", r.Alert)
		g.Expect(r.Annotations["summary"]).NotTo(BeEmpty(), "%s: summary", r.Alert)
		g.Expect(r.Annotations["description"]).NotTo(BeEmpty(), "%s: description", r.Alert)
		g.Expect(r.Annotations["runbook_url"]).To(Equal("docs/troubleshooting.md#"+strings.ToLower(r.Alert)), "%s: runbook_url is the anchor of its entry", r.Alert)
		g.Expect(entries).To(ContainElement(r.Alert), "docs/troubleshooting.md has no \"### %s\" under \"## Alerts\"", r.Alert)
	}
	for _, e := range entries {
		g.Expect(names).To(ContainElement(e), "docs/troubleshooting.md has a runbook for %s, which the rules do not have", e)
	}
	g.Expect(slices.Compact(slices.Sorted(slices.Values(names)))).To(HaveLen(len(names)), "alert names are unique")
}
