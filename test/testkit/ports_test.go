package testkit

import "testing"

// The kernel picks an ephemeral port at random, so 500 picks without the
// handed-out set repeat one with near certainty (the birthday bound over
// 28,000 ports): this test fails if FreePort forgets what it returned.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
