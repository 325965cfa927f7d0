package agent_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// policyNamed is a named with the policy zone rpz.test declared the way the
// render declares it, seeded with no rules.
func policyNamed(t *testing.T) *env {
	t.Helper()
	paths := render.Paths{DataDir: "."}
	file := paths.PolicyZoneFile("", "rpz.test")
	return startEnv(t, bindtest.Options{
		Options: `response-policy { zone "rpz.test" min-update-interval 0; } qname-wait-recurse no;`,
		Config:  `zone "rpz.test" { type primary; file "` + file + `"; allow-query { localhost; }; allow-transfer { none; }; };`,
		Files:   map[string]string{file: render.PolicyZoneFile("rpz.test", "seed", 1, nil)},
	})
}

// rules asks named for the policy zone's CNAMEs: owner → target.
func rules(t *testing.T, e *env, owners ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range owners {
		m := new(dns.Msg)
		m.SetQuestion(o+".rpz.test.", dns.TypeCNAME)
		in, err := dns.Exchange(m, e.named.DNSAddr)
		if err != nil {
			t.Fatal(err)
		}
		for _, rr := range in.Answer {
			if c, ok := rr.(*dns.CNAME); ok {
				out[o] = c.Target
			}
		}
	}
	return out
}

// TestPolicyApply: the agent rewrites a policy zone and named serves the new
// rules when the call returns; the same rules again change nothing; a zone
// named does not declare and malformed records are refused without writing.
func TestPolicyApply(t *testing.T) {
	g := NewWithT(t)
	e := policyNamed(t)
	ctx := ctxT(t)
	req := agent.PolicyRequest{Zone: "rpz.test", Policy: "firewall", Records: []agent.PolicyRecord{
		{Owner: "bad.example", Target: "."},
		{Owner: "*.ads.example", Target: "*."},
		{Owner: "32.2.2.0.192.rpz-client-ip", Target: "rpz-drop."},
	}}
	res, err := e.client.ApplyPolicy(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(agent.ActionReloaded))
	g.Expect(res.Serial).To(BeNumerically(">", 1))
	g.Expect(rules(t, e, "bad.example", "*.ads.example", "32.2.2.0.192.rpz-client-ip")).To(Equal(map[string]string{
		"bad.example": ".", "*.ads.example": "*.", "32.2.2.0.192.rpz-client-ip": "rpz-drop.",
	}))

	again, err := e.client.ApplyPolicy(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(agent.PolicyResult{Zone: "rpz.test", Action: agent.ActionUnchanged, Digest: res.Digest, Serial: res.Serial}))

	// Two edits within the same second still each reach named.
	for i, target := range []string{"portal.example.", "rpz-passthru."} {
		req.Records = []agent.PolicyRecord{{Owner: "bad.example", Target: target}}
		r, err := e.client.ApplyPolicy(ctx, req)
		g.Expect(err).NotTo(HaveOccurred(), "edit %d", i)
		g.Expect(r.Action).To(Equal(agent.ActionReloaded))
		g.Expect(rules(t, e, "bad.example", "*.ads.example")).To(Equal(map[string]string{"bad.example": target}), "edit %d", i)
	}

	// A zone named does not have: refused, nothing written.
	_, err = e.client.ApplyPolicy(ctx, agent.PolicyRequest{Zone: "rpz.other", Policy: "x"})
	var ae *agent.Error
	g.Expect(errors.As(err, &ae)).To(BeTrue(), "%v", err)
	g.Expect(ae.Status).To(Equal(http.StatusConflict))
	g.Expect(ae.Message).To(ContainSubstring("does not declare this policy"))

	// Records that would be zone-file syntax are refused.
	for _, bad := range []agent.PolicyRecord{
		{Owner: "evil.example\n@ IN NS attacker.", Target: "."},
		{Owner: "ok.example", Target: "evil.example"},
		{Owner: "ok.example", Target: `"quoted".`},
		{Owner: "", Target: "."},
	} {
		_, err := e.client.ApplyPolicy(ctx, agent.PolicyRequest{Zone: "rpz.test", Policy: "firewall", Records: []agent.PolicyRecord{bad}})
		g.Expect(errors.As(err, &ae)).To(BeTrue(), "%q: %v", bad, err)
		g.Expect(ae.Status).To(Equal(http.StatusUnprocessableEntity), "%q", bad)
		g.Expect(ae.Field).To(HavePrefix("records"))
	}
	_, err = e.client.ApplyPolicy(ctx, agent.PolicyRequest{Zone: "rpz.test", Policy: "firewall", Records: slices.Repeat([]agent.PolicyRecord{{Owner: "x", Target: "."}}, 2)})
	g.Expect(err).To(MatchError(ContainSubstring("appears twice")))
	g.Expect(rules(t, e, "bad.example")).To(Equal(map[string]string{"bad.example": "rpz-passthru."}), "refused requests leave the rules alone")
	g.Expect(strings.Contains(e.named.Log(), "attacker")).To(BeFalse())
}
