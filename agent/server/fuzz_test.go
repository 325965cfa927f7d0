package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/render"
)

// FuzzEnsureRequest feeds arbitrary bodies to the ensure and batch
// handlers' decoding and validation. The agent has no named behind it (the
// control address is closed), so anything that passes validation ends in a
// 503; nothing panics, every answer is JSON with a status from the
// documented set, and an accepted request's names and file stay inside the
// data directory.
//
//	go test -fuzz FuzzEnsureRequest -fuzztime 30s ./agent/server/
func FuzzEnsureRequest(f *testing.F) {
	paths := render.Paths{ConfigDir: "/c", KeysDir: "/k", DataDir: "/d"}
	seed := func(r agent.EnsureZoneRequest) []byte { b, _ := json.Marshal(r); return b }
	f.Add(seed(agent.EnsureZoneRequest{Zone: "a.test", Clause: `{ type primary; file "/d/zones/_default/a.test.db"; };`, Seed: "x"}))
	f.Add(seed(agent.EnsureZoneRequest{View: "v", Zone: "a.test", Clause: `{ type secondary; file "/d/s/a.db"; primaries { 198.18.0.1; }; };`}))
	f.Add([]byte(`{"zones":[{"zone":"a.test","clause":"{ type primary; };"}]}`))
	f.Add([]byte(`{"zone":"a\".test","clause":"{ }; include \"/etc/passwd\";"}`))
	st, err := openStore(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	a := &Agent{
		store:   st,
		cfg:     Config{Paths: paths, ControlAddr: "127.0.0.1:1"},
		log:     discardLogger(),
		api:     &session{addr: "127.0.0.1:1", keyFile: "/nonexistent"},
		metrics: newAgentMetrics(nopRegisterer{}, func() int { return 0 }),
		ready:   newReadiness(),
	}
	h := a.apiHandler()
	f.Fuzz(func(t *testing.T, body []byte) {
		var req agent.EnsureZoneRequest
		if json.Unmarshal(body, &req) == nil {
			if op, err := a.checkEnsure(req); err == nil {
				if op.clause.File != "" && !strings.HasPrefix(op.clause.File, "/d/") {
					t.Fatalf("accepted file %q outside the data dir", op.clause.File)
				}
				if strings.ContainsAny(op.ref.Zone+op.ref.View, "\"{}; \\/\n") {
					t.Fatalf("accepted names %+v", op.ref)
				}
			}
		}
		for _, path := range []string{agent.PathEnsure, agent.PathEnsureBatch} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
			switch {
			case rec.Code == 200 && path == agent.PathEnsureBatch && strings.Contains(rec.Body.String(), `"results":[]`):
				continue // an empty batch
			case rec.Code == 400, rec.Code == 413, rec.Code == 422, rec.Code == 503:
			default:
				t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
			}
			var er agent.ErrorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Error == "" {
				t.Fatalf("%s: body %q", path, rec.Body)
			}
		}
	})
}
