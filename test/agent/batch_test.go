package agent_test

import (
	"fmt"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// 1,000 zones in one batch request: all added and served, the rate is
// logged; the same batch again changes nothing.
func TestBatch1000(t *testing.T) {
	e := startEnv(t, bindtest.Options{})
	ctx := ctxT(t)
	reqs := make([]agent.EnsureZoneRequest, 1000)
	for i := range reqs {
		reqs[i] = e.primary("", fmt.Sprintf("b%04d.test", i), "")
	}
	start := time.Now()
	res, err := e.client.EnsureZones(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	t.Logf("1000 zones through the agent in %s: %.0f zones/s", elapsed.Round(time.Millisecond), 1000/elapsed.Seconds())
	for i, r := range res {
		if r.Action != agent.ActionAdded || r.Zone != reqs[i].Zone {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	for i := 0; i < 1000; i += 97 {
		if serial, _ := soa(t, e.named.DNSAddr, reqs[i].Zone); serial != 1 {
			t.Fatalf("%s serial %d", reqs[i].Zone, serial)
		}
	}
	res, err = e.client.EnsureZones(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Action != agent.ActionUnchanged {
			t.Fatalf("repeat result %d: %+v", i, r)
		}
	}
	// A batch where named refuses one zone: the others are applied and the
	// client reports the failure per zone.
	mixed := []agent.EnsureZoneRequest{
		e.primary("", "mixed-ok.test", ""),
		{Zone: "mixed-bad.test", Clause: fmt.Sprintf(`{ type primary; file %q; };`, e.paths.PrimaryZoneFile("", "mixed-bad.test"))},
	}
	res, err = e.client.EnsureZones(ctx, mixed)
	var be *agent.BatchError
	if !asErr(err, &be) || len(be.Failed) != 1 || be.Failed[0].Zone != "mixed-bad.test" || res[0].Action != agent.ActionAdded {
		t.Fatalf("mixed batch: %v %+v", err, res)
	}
	e.waitReady(t, 200)
}
