package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }

// Only clients with a client certificate from the cluster's CA get in.
func TestMutualTLSRefusals(t *testing.T) {
	e := startEnv(t, bindtest.Options{})
	other, _ := agent.NewCA("other-cluster", 0)
	otherOp, _ := agent.IssueClient(other, "bind-operator", 0)
	srvPair, _ := agent.IssueServer(e.ca, 0)

	for name, cfg := range map[string]agent.ClientConfig{
		"no client certificate":         {TLS: tlsWith(t, e.ca.CertPEM, nil)},
		"certificate from another CA":   {TLS: tlsWith(t, e.ca.CertPEM, otherOp)},
		"serving certificate as client": {TLS: tlsWith(t, e.ca.CertPEM, srvPair)},
		"agent not trusted (other CA)":  {CAPEM: other.CertPEM, CertPEM: e.operator.CertPEM, KeyPEM: e.operator.KeyPEM},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.Address = e.apiAddr
			cfg.Timeout = 10 * time.Second
			c, err := agent.NewClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.ZoneStatus(context.Background(), agent.ZoneRef{Zone: "x.test"})
			if err == nil {
				t.Fatal("request succeeded")
			}
			var ae *agent.Error
			if errors.As(err, &ae) {
				t.Fatalf("got an HTTP answer (%v): the request got past TLS", ae)
			}
		})
	}
	// Plain HTTP on the API port gets nothing useful.
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Post("http://"+e.apiAddr+agent.PathSync, "application/json", nil)
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP sync accepted")
		}
	}
	// The operator still gets in.
	if _, err := e.client.ZoneStatus(context.Background(), agent.ZoneRef{Zone: "x.test"}); err != nil {
		t.Fatal(err)
	}
}

// Oversized, malformed and hostile requests are refused with 4xx, nothing
// reaches named, and the agent keeps serving.
func TestHostileRequests(t *testing.T) {
	e := startEnv(t, bindtest.Options{})
	hc := e.rawClient(t)
	base := "https://" + e.apiAddr
	good := e.primary("", "ok.test", "")
	goodJSON, _ := json.Marshal(good)
	clauseWith := func(c string) string { r := good; r.Clause = c; b, _ := json.Marshal(r); return string(b) }
	file := e.paths.PrimaryZoneFile("", "ok.test")

	cases := []struct {
		name, method, path, body string
		want                     int
	}{
		{"oversize", "POST", agent.PathEnsure, `{"zone":"a.test","clause":"` + strings.Repeat("x", agent.MaxRequestBytes) + `"}`, 413},
		{"oversize batch", "POST", agent.PathEnsureBatch, `{"zones":[` + strings.Repeat(`{"zone":"a.test","clause":"x"},`, agent.MaxBatchBytes/30) + `{}]}`, 413},
		{"unknown field", "POST", agent.PathEnsure, `{"zone":"a.test","clause":"{ type primary; };","extra":1}`, 400},
		{"trailing data", "POST", agent.PathEnsure, string(goodJSON) + `{}`, 400},
		{"not json", "POST", agent.PathEnsure, `zone=a.test`, 400},
		{"empty body", "POST", agent.PathEnsure, ``, 400},
		{"wrong types", "POST", agent.PathEnsure, `{"zone":1}`, 400},
		{"GET", "GET", agent.PathEnsure, ``, 405},
		{"unknown path", "POST", "/v1/exec", `{}`, 404},
		{"zone with quote", "POST", agent.PathEnsure, `{"zone":"a\".test","clause":"{ type primary; };"}`, 422},
		{"zone with space", "POST", agent.PathDelete, `{"zone":"a b"}`, 422},
		{"zone with slash", "POST", agent.PathStatus, `{"zone":"../../etc"}`, 422},
		{"view escape", "POST", agent.PathStatus, `{"view":"..","zone":"a.test"}`, 422},
		{"view with brace", "POST", agent.PathDelete, `{"view":"a{","zone":"a.test"}`, 422},
		{"clause escape", "POST", agent.PathEnsure, clauseWith(`{ type primary; file "` + file + `"; }; include "/etc/passwd"; {};`), 422},
		{"clause include", "POST", agent.PathEnsure, clauseWith(`{ type primary; file "` + file + `"; include "/etc/passwd"; };`), 422},
		{"clause comment", "POST", agent.PathEnsure, clauseWith(`{ type primary; file "` + file + `"; /* }; */ };`), 422},
		{"clause nested zone", "POST", agent.PathEnsure, clauseWith(`{ type primary; file "` + file + `"; zone "x" { }; };`), 422},
		{"clause file outside", "POST", agent.PathEnsure, clauseWith(`{ type primary; file "/etc/shadow"; };`), 422},
		{"clause dlz", "POST", agent.PathEnsure, clauseWith(`{ type primary; file "` + file + `"; database "dlopen /tmp/x.so"; };`), 422},
		{"seed elsewhere", "POST", agent.PathEnsure, clauseWith(`{ type primary; file "` + e.paths.PrimaryZoneFile("", "other.test") + `"; };`), 422},
		{"batch with one bad", "POST", agent.PathEnsureBatch, `{"zones":[` + string(goodJSON) + `,{"zone":"b;.test","clause":"{ type primary; };"}]}`, 422},
		{"batch duplicate", "POST", agent.PathEnsureBatch, `{"zones":[` + string(goodJSON) + `,` + string(goodJSON) + `]}`, 422},
		{"batch too many", "POST", agent.PathEnsureBatch, `{"zones":[` + strings.Repeat(`{},`, agent.MaxBatchZones) + `{}]}`, 413},
		{"named refuses (no seed, no file)", "POST", agent.PathEnsure, `{"zone":"nofile.test","clause":"{ type primary; file \"` + e.paths.PrimaryZoneFile("", "nofile.test") + `\"; };"}`, 422},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, base+c.path, bytes.NewReader([]byte(c.body)))
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.want, body)
			}
			if c.want != 405 && c.want != 404 {
				var er agent.ErrorResponse
				if err := json.Unmarshal(body, &er); err != nil || er.Error == "" {
					t.Fatalf("error body %q", body)
				}
			}
		})
	}
	// Nothing from the refused batch was applied, and the agent still works.
	st, err := e.client.ZoneStatus(ctxT(t), agent.ZoneRef{Zone: "ok.test"})
	if err != nil || st.Exists {
		t.Fatalf("a refused batch applied a zone: %+v %v", st, err)
	}
	if res, err := e.client.EnsureZone(ctxT(t), good); err != nil || res.Action != agent.ActionAdded {
		t.Fatalf("after hostile requests: %+v %v", res, err)
	}
	// The typed client reports the agent's message and field.
	bad := good
	bad.Zone = "bad zone"
	_, err = e.client.EnsureZone(ctxT(t), bad)
	var ae *agent.Error
	if !errors.As(err, &ae) || ae.Status != 422 || ae.Field != "zone" || !ae.Invalid() {
		t.Fatalf("typed error: %#v", err)
	}
	if !strings.Contains(ae.Error(), "zone") {
		t.Fatalf("message: %v", ae)
	}
}
