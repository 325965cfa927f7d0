package agent_test

import (
	"fmt"
	"sync"
	"testing"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// Several operator workers ensuring the same zones at once (as after a
// leader change) end with every zone added exactly once and the rest
// reported unchanged; status calls run alongside.
func TestConcurrentEnsures(t *testing.T) {
	e := startEnv(t, bindtest.Options{})
	ctx := ctxT(t)
	const workers, zones = 6, 40
	var mu sync.Mutex
	actions := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := 0; i < zones; i++ {
				z := fmt.Sprintf("c%02d.test", (i+w*7)%zones)
				res, err := e.client.EnsureZone(ctx, e.primary("", z, ""))
				if err != nil {
					t.Errorf("ensure %s: %v", z, err)
					return
				}
				if _, err := e.client.ZoneStatus(ctx, agent.ZoneRef{Zone: z}); err != nil {
					t.Errorf("status %s: %v", z, err)
					return
				}
				mu.Lock()
				actions[res.Action]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if actions[agent.ActionAdded] != zones || actions[agent.ActionUnchanged] != zones*(workers-1) {
		t.Fatalf("actions %v", actions)
	}
	for i := 0; i < zones; i += 9 {
		if serial, _ := soa(t, e.named.DNSAddr, fmt.Sprintf("c%02d.test", i)); serial != 1 {
			t.Fatalf("c%02d.test serial %d", i, serial)
		}
	}
}
