package server

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"git.unkin.net/unkin/bind-operator/internal/version"
	"git.unkin.net/unkin/bind-operator/render"
)

// TestMetricsShowBuildInfo: /metrics says which release the agent runs,
// under the manager's metric name and labels.
func TestMetricsShowBuildInfo(t *testing.T) {
	stats := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no named here", http.StatusServiceUnavailable)
	}))
	defer stats.Close()
	dir := t.TempDir()
	a, err := New(Config{Paths: render.Paths{ConfigDir: dir, KeysDir: dir, DataDir: dir}, StatisticsURL: stats.URL, TLS: &tls.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	a.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	want := version.BuildInfoName + `{commit="` + version.Commit() + `",goversion="`
	var line string
	for l := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(l, want) {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, `version="`+version.Version()+`"} 1`) {
		t.Fatalf("no %s line with version %s in /metrics:\n%s", version.BuildInfoName, version.Version(), body)
	}
}
