package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// hostileAgent serves fixed replies over real mutual TLS, as a
// compromised or broken pod could.
func hostileAgent(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	ca, _ := NewCA("t", 0)
	srv, _ := IssueServer(ca, 0)
	op, _ := IssueClient(ca, "op", 0)
	s := httptest.NewUnstartedServer(h)
	pair, err := tlsPair(srv)
	if err != nil {
		t.Fatal(err)
	}
	s.TLS = pair
	s.StartTLS()
	t.Cleanup(s.Close)
	c, err := NewClient(ClientConfig{Address: strings.TrimPrefix(s.URL, "https://"), CAPEM: ca.CertPEM, CertPEM: op.CertPEM, KeyPEM: op.KeyPEM, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestClientHostileReplies(t *testing.T) {
	ctx := context.Background()
	huge := strings.Repeat("x", MaxReplyBytes+10)
	for name, tc := range map[string]struct {
		h     http.HandlerFunc
		check func(error) bool
	}{
		"error with message": {
			func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(422)
				w.Write([]byte(`{"error":"zone: bad\n\u0000name","field":"zone"}`))
			},
			func(err error) bool {
				var e *Error
				return errors.As(err, &e) && e.Status == 422 && e.Field == "zone" && e.Invalid() && !strings.ContainsAny(e.Message, "\n\x00")
			},
		},
		"error without JSON": {
			func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(503)
				w.Write([]byte(strings.Repeat("y", 5000)))
			},
			func(err error) bool {
				var e *Error
				return errors.As(err, &e) && e.Status == 503 && len(e.Message) < 1100 && !e.Invalid()
			},
		},
		"garbage 200": {
			func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"action":`)) },
			func(err error) bool { return errors.Is(err, ErrBadReply) },
		},
		"oversize 200": {
			func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(huge)) },
			func(err error) bool { return errors.Is(err, ErrBadReply) },
		},
		"slow": {
			func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(6 * time.Second): // past the client's 5 s timeout
				}
			},
			func(err error) bool { return err != nil },
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := hostileAgent(t, tc.h)
			_, err := c.EnsureZone(ctx, EnsureZoneRequest{Zone: "a.test", Clause: "{ type primary; };"})
			if !tc.check(err) {
				t.Fatalf("error %v (%T)", err, err)
			}
		})
	}
	// A batch reply with the wrong number of results is refused.
	c := hostileAgent(t, func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(`{"results":[]}`)) })
	if _, err := c.EnsureZones(ctx, []EnsureZoneRequest{{Zone: "a.test"}}); !errors.Is(err, ErrBadReply) {
		t.Fatalf("short batch reply: %v", err)
	}
	// The client refuses to send what the agent would refuse.
	if _, err := c.EnsureZones(ctx, make([]EnsureZoneRequest, MaxBatchZones+1)); err == nil {
		t.Fatal("oversized batch sent")
	}
	if _, err := c.EnsureZone(ctx, EnsureZoneRequest{Zone: "a.test", Seed: strings.Repeat("s", MaxRequestBytes)}); err == nil || strings.Contains(err.Error(), "ssss") {
		t.Fatalf("oversized request: %v", err)
	}
}

// TestLargestBatchReplyFits: a full batch reply with the longest names the
// agent accepts and every error at its bound, made of the characters JSON
// escapes most (six bytes each), is read whole by the client: the reply cap
// is what the API needs, not more.
func TestLargestBatchReplyFits(t *testing.T) {
	label := strings.Repeat("a", 63)
	zone := strings.Join([]string{label, label, label, strings.Repeat("b", 61)}, ".") // 253
	view := strings.Repeat("v", 63)
	res := EnsureZonesResponse{Results: make([]EnsureZoneResult, MaxBatchZones)}
	for i := range res.Results {
		res.Results[i] = EnsureZoneResult{View: view, Zone: zone, Action: ActionUnchanged, SeedWritten: true,
			Error: BoundTo(strings.Repeat("<", 10*MaxResultErrorBytes), MaxResultErrorBytes)}
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > MaxReplyBytes {
		t.Fatalf("the largest batch reply is %d bytes, over MaxReplyBytes (%d)", len(data), MaxReplyBytes)
	}
	if len(data) < MaxReplyBytes/2 {
		t.Fatalf("the largest batch reply is %d bytes, under half of MaxReplyBytes (%d): lower the cap", len(data), MaxReplyBytes)
	}
	t.Logf("largest batch reply: %d bytes of %d allowed", len(data), MaxReplyBytes)
}
