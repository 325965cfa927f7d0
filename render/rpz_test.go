package render

import (
	"testing"

	. "github.com/onsi/gomega"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestPolicyRuleEditKeepsTheHash: rules are data. Editing, adding or
// removing a rule changes the policy zone's seed, never the config hash, so
// no pod rolls; the policy's other settings are config and do change it.
func TestPolicyRuleEditKeepsTheHash(t *testing.T) {
	g := NewWithT(t)
	base, err := Render(scenarioRPZ())
	g.Expect(err).NotTo(HaveOccurred())
	for _, tc := range []struct {
		desc    string
		edit    func(*bindv1alpha1.BindPolicySpec)
		rolls   bool
		seedKey string
	}{
		{"rule added", func(s *bindv1alpha1.BindPolicySpec) {
			s.Rules = append(s.Rules, bindv1alpha1.RPZRule{Match: "new.example", Action: "NXDOMAIN"})
		}, false, "rpz._default.rpz.threats.internal.db"},
		{"action changed", func(s *bindv1alpha1.BindPolicySpec) { s.Rules[0].Action = "NODATA" }, false, "rpz._default.rpz.threats.internal.db"},
		{"rules emptied", func(s *bindv1alpha1.BindPolicySpec) { s.Rules = nil }, false, "rpz._default.rpz.threats.internal.db"},
		{"max policy TTL", func(s *bindv1alpha1.BindPolicySpec) { s.MaxPolicyTTL = nil }, true, ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			g := NewWithT(t)
			in := scenarioRPZ()
			tc.edit(&in.Policies[0].Spec)
			res, err := Render(in)
			g.Expect(err).NotTo(HaveOccurred())
			if tc.rolls {
				g.Expect(ConfigHash(res)).NotTo(Equal(ConfigHash(base)))
				return
			}
			g.Expect(ConfigHash(res)).To(Equal(ConfigHash(base)), "a rule edit must not roll the pods")
			g.Expect(res.SeedData[tc.seedKey]).NotTo(Equal(base.SeedData[tc.seedKey]), "the seed carries the new rules")
			recs, err := PolicyRecords(&in.Policies[0])
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(FilePolicyDigest(res.SeedData[tc.seedKey])).To(Equal(PolicyDigest(recs)))
		})
	}
}
