package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// testChecks are reply checks for this package's tests, which cannot
// link agent/validate (it imports this package): enough of them to tell a
// canonical reply from another. test/agent runs the real ones.
var testChecks = func() ReplyChecks {
	ref := func(r ZoneRef) (ZoneRef, error) {
		zone := strings.ToLower(strings.TrimSuffix(r.Zone, "."))
		if zone == "" || strings.ContainsAny(zone+r.View, "/ \n") {
			return r, errors.New("zone: not a name")
		}
		return ZoneRef{View: r.View, Zone: zone}, nil
	}
	return ReplyChecks{
		Ref: ref,
		Owners: func(req OwnersRequest) (OwnersRequest, error) {
			r, err := ref(ZoneRef{View: req.View, Zone: req.Zone})
			req.View, req.Zone = r.View, r.Zone
			return req, err
		},
	}
}()

// Stored-owner reads refuse to run without the checks of their replies,
// before sending anything.
func TestStoredOwnersNeedChecks(t *testing.T) {
	var called atomic.Bool
	c := hostileAgent(t, func(w http.ResponseWriter, _ *http.Request) { called.Store(true); w.Write([]byte(`{"zones":[]}`)) })
	_, err := c.StoredOwnersList(context.Background(), ReplyChecks{})
	if err == nil || !strings.Contains(err.Error(), "validate.Replies") {
		t.Fatalf("list without checks: %v", err)
	}
	_, err = c.StoredOwners(context.Background(), ZoneRef{Zone: "a.test"}, ReplyChecks{})
	if err == nil || !strings.Contains(err.Error(), "validate.Replies") {
		t.Fatalf("get without checks: %v", err)
	}
	if called.Load() {
		t.Fatal("a request was sent")
	}
}

// Replies to the stored-owner reads are untrusted: a list is bounded,
// canonical and in order; a zone's owners name the zone asked for; a 404
// (no such path on an older agent, or nothing stored) is IsNotFound; and
// only the read of one zone's owners may be as large as a push.
func TestStoredOwnersHostileReplies(t *testing.T) {
	ctx := context.Background()
	reply := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status); w.Write([]byte(body)) }
	}
	for name, body := range map[string]string{
		"unsorted":      `{"zones":[{"zone":"b.test"},{"zone":"a.test"}]}`,
		"repeated":      `{"zones":[{"zone":"a.test","view":"v"},{"zone":"a.test","view":"v"}]}`,
		"not canonical": `{"zones":[{"zone":"A.test."}]}`,
		"invalid":       `{"zones":[{"zone":"a/test"}]}`,
		"too many":      `{"zones":[` + strings.Repeat(`{"zone":"a.test"},`, MaxStoredZones) + `{"zone":"a.test"}]}`,
	} {
		c := hostileAgent(t, reply(200, body))
		if _, err := c.StoredOwnersList(ctx, testChecks); !errors.Is(err, ErrBadReply) {
			t.Fatalf("list %s: %v", name, err)
		}
	}
	c := hostileAgent(t, reply(200, `{"zones":[{"zone":"a.test"},{"view":"v","zone":"a.test"},{"zone":"b.test"}]}`))
	refs, err := c.StoredOwnersList(ctx, testChecks)
	if err != nil || len(refs) != 3 {
		t.Fatalf("list: %v %v", refs, err)
	}

	c = hostileAgent(t, reply(200, `{"view":"v","zone":"b.test","updateKeys":[],"sets":[]}`))
	if _, err := c.StoredOwners(ctx, ZoneRef{View: "v", Zone: "a.test"}, testChecks); !errors.Is(err, ErrBadReply) || !strings.Contains(err.Error(), "b.test") {
		t.Fatalf("another zone: %v", err)
	}
	if _, err := c.StoredOwners(ctx, ZoneRef{Zone: "b.test"}, testChecks); !errors.Is(err, ErrBadReply) {
		t.Fatalf("another view: %v", err)
	}
	got, err := c.StoredOwners(ctx, ZoneRef{View: "v", Zone: "B.test."}, testChecks)
	if err != nil || got.Zone != "b.test" {
		t.Fatalf("the zone asked for, spelled otherwise: %+v %v", got, err)
	}

	c = hostileAgent(t, reply(404, `404 page not found`))
	_, err = c.StoredOwnersList(ctx, testChecks)
	if !IsNotFound(err) {
		t.Fatalf("404: %v", err)
	}
	if IsNotFound(&Error{Status: 422}) || IsNotFound(ErrBadReply) || IsNotFound(nil) {
		t.Fatal("IsNotFound of another error")
	}

	// A reply over MaxReplyBytes: the read of one zone's owners takes it,
	// up to MaxOwnersBytes; other calls do not.
	sets := strings.Repeat(`{"name":"a.test","type":"TXT","values":["`+strings.Repeat("x", 4000)+`"]},`, (MaxReplyBytes+MaxOwnersBytes)/2/4050)
	big := `{"zone":"a.test","updateKeys":[],"sets":[` + sets + `{"name":"a.test","type":"A"}]}`
	if len(big) <= MaxReplyBytes || len(big) > MaxOwnersBytes {
		t.Fatalf("a reply of %d bytes does not test the bound", len(big))
	}
	c = hostileAgent(t, reply(200, big))
	if got, err := c.StoredOwners(ctx, ZoneRef{Zone: "a.test"}, testChecks); err != nil || len(got.Sets) < 2 {
		t.Fatalf("a large stored-owners reply: %v", err)
	}
	if _, err := c.ZoneStatus(ctx, ZoneRef{Zone: "a.test"}); !errors.Is(err, ErrBadReply) {
		t.Fatalf("a large status reply: %v", err)
	}
	c = hostileAgent(t, reply(200, big+strings.Repeat(" ", MaxOwnersBytes-len(big)+1)))
	if _, err := c.StoredOwners(ctx, ZoneRef{Zone: "a.test"}, testChecks); !errors.Is(err, ErrBadReply) {
		t.Fatalf("a stored-owners reply over MaxOwnersBytes: %v", err)
	}
}

// TestLargestStoredListFits: a list of MaxStoredZones refs with the
// longest view and zone names the agent takes fits MaxStoredListBytes, and
// the bound is not far above it.
func TestLargestStoredListFits(t *testing.T) {
	label := strings.Repeat("a", 63)
	zone := strings.Join([]string{label, label, label, strings.Repeat("b", 61)}, ".") // 253
	list := StoredOwners{Zones: make([]ZoneRef, MaxStoredZones)}
	for i := range list.Zones {
		list.Zones[i] = ZoneRef{View: strings.Repeat("v", 63), Zone: zone}
	}
	data, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	if len(data)+1 > MaxStoredListBytes || len(data) < MaxStoredListBytes*7/8 {
		t.Fatalf("the largest list is %d bytes, MaxStoredListBytes %d", len(data), MaxStoredListBytes)
	}
	t.Logf("largest list: %d bytes of %d allowed", len(data), MaxStoredListBytes)
}
