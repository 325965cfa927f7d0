package agent_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
	"git.unkin.net/unkin/bind-operator/test/testkit"
	. "github.com/onsi/gomega"
)

// /readyz follows named and the expected zones:
//   - ready with named up and nothing expected;
//   - a restarted agent reads its expected list from the data dir and is
//     unready while an expected primary is missing from named;
//   - ensuring it makes the pod ready again;
//   - a secondary that cannot transfer does not hold readiness back;
//   - named gone → unready; /healthz stays 200 throughout.
func TestReadiness(t *testing.T) {
	named, statsURL := startNamed(t, bindtest.Options{})
	e := startAgent(t, named, statsURL, render.Paths{})
	ctx := ctxT(t)
	e.waitReady(t, http.StatusOK)

	if _, err := e.client.EnsureZone(ctx, e.primary("", "ready.test", "")); err != nil {
		t.Fatal(err)
	}
	// Adding a primary never makes a ready pod unready.
	if code, body := e.readyz(t); code != http.StatusOK {
		t.Fatalf("after ensure: %d %s", code, body)
	}

	// The zone disappears from named behind the agent's back, and the
	// agent restarts (same data dir): it must wait for the zone.
	if out, err := named.Rndc(ctx, "delzone", "ready.test"); err != nil {
		t.Fatalf("delzone: %v %s", err, out)
	}
	paths := e.paths
	e.stop()
	e2 := startAgent(t, named, statsURL, paths)
	NewWithT(t).Eventually(func() (string, error) {
		code, body := e2.readyz(t)
		if code == http.StatusOK {
			return "", StopTrying("ready while an expected zone is missing: " + body)
		}
		return body, nil
	}).WithTimeout(15*time.Second).WithPolling(50*time.Millisecond).Should(ContainSubstring("ready.test"), "the unready reason names the zone")
	if _, err := e2.client.EnsureZone(ctx, e2.primary("", "ready.test", "")); err != nil {
		t.Fatal(err)
	}
	e2.waitReady(t, http.StatusOK)

	// A secondary whose primary is unreachable is added but never loads;
	// readiness does not wait for it.
	sec := agent.EnsureZoneRequest{Zone: "sec.test", Clause: fmt.Sprintf(`{ type secondary; file %q; primaries { 127.0.0.1 port %d; }; };`,
		paths.SecondaryZoneFile("", "sec.test"), testkit.FreePort(t))}
	if res, err := e2.client.EnsureZone(ctx, sec); err != nil || res.Action != agent.ActionAdded {
		t.Fatalf("secondary: %+v %v", res, err)
	}
	if st, err := e2.client.ZoneStatus(ctx, agent.ZoneRef{Zone: "sec.test"}); err != nil || !st.Exists || st.Loaded {
		t.Fatalf("secondary status: %+v %v", st, err)
	}
	e2.waitReady(t, http.StatusOK)
	if code, _ := e2.readyz(t); code != http.StatusOK {
		t.Fatalf("secondary held readiness back")
	}

	// named stops: unready, but the agent is alive.
	named.Stop()
	e2.waitReady(t, http.StatusServiceUnavailable)
	resp, err := http.Get(e2.metricsURL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	// The API reports named's absence as retryable (5xx), not as a bad request.
	_, err = e2.client.ZoneStatus(ctx, agent.ZoneRef{Zone: "ready.test"})
	var ae *agent.Error
	if !asErr(err, &ae) || ae.Status < 500 {
		t.Fatalf("status with named down: %v", err)
	}
}
