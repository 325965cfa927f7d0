package version

import (
	"regexp"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// withBuild sets what the linker would for the test's duration.
func withBuild(t *testing.T, v, c, repo string) {
	t.Helper()
	oldV, oldC, oldR := version, commit, repository
	version, commit, repository = v, c, repo
	t.Cleanup(func() { version, commit, repository = oldV, oldC, oldR })
}

func TestDevelopmentBuild(t *testing.T) {
	// go test sets no -X: these are the defaults a plain go build gets.
	if Version() != "v0.0.0-dev" || Commit() != "" || Repository() != "git.unkin.net/unkin" {
		t.Fatalf("defaults: version %q, commit %q, repository %q", Version(), Commit(), Repository())
	}
	if got, want := BindImage(), "git.unkin.net/unkin/bind-operator-bind9:v0.0.0-dev"; got != want {
		t.Errorf("BindImage() = %q, want %q", got, want)
	}
	if got, want := OperatorImage(), "git.unkin.net/unkin/bind-operator:v0.0.0-dev"; got != want {
		t.Errorf("OperatorImage() = %q, want %q", got, want)
	}
	if got, want := String(), "bind-operator v0.0.0-dev (commit unknown, "+runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH+")"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestRelease(t *testing.T) {
	withBuild(t, "v0.1.0", "abc1234", "registry.example:5000/dns")
	if got, want := BindImage(), "registry.example:5000/dns/bind-operator-bind9:v0.1.0"; got != want {
		t.Errorf("BindImage() = %q, want %q", got, want)
	}
	if got, want := OperatorImage(), "registry.example:5000/dns/bind-operator:v0.1.0"; got != want {
		t.Errorf("OperatorImage() = %q, want %q", got, want)
	}
	if !regexp.MustCompile(`^bind-operator v0\.1\.0 \(commit abc1234, go[^ ,]+, [a-z0-9]+/[a-z0-9]+\)$`).MatchString(String()) {
		t.Errorf("String() = %q", String())
	}
}

func TestBuildInfoMetric(t *testing.T) {
	withBuild(t, "v0.1.0", "abc1234", "git.unkin.net/unkin")
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	// Twice is no error: a second setup in one process must not fail.
	if err := Register(reg); err != nil {
		t.Fatalf("second Register: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != BuildInfoName || mfs[0].GetType() != dto.MetricType_GAUGE || len(mfs[0].Metric) != 1 {
		t.Fatalf("gathered %v", mfs)
	}
	m := mfs[0].Metric[0]
	if m.GetGauge().GetValue() != 1 {
		t.Errorf("value %v, want 1", m.GetGauge().GetValue())
	}
	labels := map[string]string{}
	for _, l := range m.Label {
		labels[l.GetName()] = l.GetValue()
	}
	want := map[string]string{"version": "v0.1.0", "commit": "abc1234", "goversion": runtime.Version()}
	if len(labels) != len(want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, labels[k], v)
		}
	}
}
