package server

import (
	"context"
	"time"

	"git.unkin.net/unkin/bind-operator/agent"
)

// A zone named signs in place (dnssec-policy, no inline signing) signs an
// UPDATE only once the zone is secure (DNSKEY and a finished NSEC or NSEC3
// chain at its apex). Right after addzone it is not: named creates the keys
// and signs the zone in its background, and an UPDATE that lands in that
// moment (the DNSRecord controller sends them as soon as the zone answers)
// keeps its records unsigned for good, BIND 9.18 never signs them later.
// Validators then fail every answer for those names ("insecurity proof
// failed"). Measured with named on loopback: a writer racing addzone left
// unsigned names in most zones (test/agent
// TestSignedZoneSignsUpdatesFromItsFirstMoment).
//
// So after adding such a zone, or giving an unsigned one a policy, the
// agent waits until named reports the zone secure and then asks for a full
// signing (rndc sign), which signs whatever got in before. UPDATEs after
// that are signed as named applies them. A zone created by the agent is
// nearly empty, so the full signing costs little.
const (
	// signingWait bounds the wait for the initial signing. named signs a
	// new zone in milliseconds; the bound is for a starved pod. After it
	// the full signing is asked for anyway: it signs every name present
	// once named gets to it.
	signingWait = 10 * time.Second
	// signingPoll is the pause between two zonestatus questions.
	signingPoll = 5 * time.Millisecond
)

// settleSigning waits (bounded) until named reports ref secure, then asks
// for a full signing.
func (a *Agent) settleSigning(ctx context.Context, ref agent.ZoneRef) error {
	secure, err := a.waitSecure(ctx, ref)
	if err != nil {
		return err
	}
	if !secure {
		a.log.Warn("zone not secure yet; asking for a full signing anyway", "view", ref.View, "zone", ref.Zone, "waited", signingWait)
	}
	_, err = a.api.command(ctx, "sign "+target(ref))
	return err
}

// waitSecure asks rndc zonestatus until named reports ref secure; false
// once signingWait has passed.
func (a *Agent) waitSecure(ctx context.Context, ref agent.ZoneRef) (bool, error) {
	wctx, cancel := context.WithTimeout(ctx, signingWait)
	defer cancel()
	for {
		resp, err := a.api.command(wctx, "zonestatus "+target(ref))
		switch {
		case err == nil && zoneSecure(resp.Text):
			return true, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case wctx.Err() != nil:
			return false, nil
		case err != nil:
			return false, err
		}
		select {
		case <-wctx.Done():
		case <-time.After(signingPoll):
		}
	}
}

// zoneSecure reads the `secure:` line of rndc zonestatus.
func zoneSecure(text string) bool {
	for k, v := range zoneStatusLines(text) {
		if k == "secure" {
			return v == "yes"
		}
	}
	return false
}
