package render

import (
	"testing"

	. "github.com/onsi/gomega"
)

// A forwarder naming a cluster that has no address, and a DS record that is
// not one, are render errors that say which object and field.
func TestForwardeeErrors(t *testing.T) {
	for _, tc := range []struct {
		desc string
		edit func(*Input)
		want string
	}{
		{"cluster unknown", func(in *Input) { delete(in.Forwardees, "authoritative-2") },
			`BindZone elsewhere spec.forwarders[0] names BindCluster "authoritative-2", which does not exist or has no query Service address yet`},
		{"no address yet", func(in *Input) { in.Forwardees["authoritative-2"] = Forwardee{} },
			`names BindCluster "authoritative-2", which does not exist or has no query Service address yet`},
		{"DS with three fields", func(in *Input) { in.Forwardees["authoritative"].Zones["example.com"][0] = "2371 13 2" },
			`the DS record "2371 13 2" of zone example.com on BindCluster "authoritative": want 4 fields`},
		{"DS digest injection", func(in *Input) {
			in.Forwardees["authoritative"].Zones["example.com"][0] = `2371 13 2 AB";};include"/etc/passwd`
		}, `is not hexadecimal`},
		{"DS key tag too large", func(in *Input) { in.Forwardees["authoritative"].Zones["example.com"][0] = "70000 13 2 AB" },
			`field 1 70000 is above 65535`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			in := scenarioResolver()
			tc.edit(&in)
			_, err := Render(in)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

// Without validation nothing is excepted or anchored.
func TestForwardeeTrustOnlyWhenValidating(t *testing.T) {
	in := scenarioResolver()
	in.Cluster.Spec.Recursion.DNSSECValidation = "No"
	res, err := Render(in)
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ConfigData[FilePrimaryConf]).NotTo(ContainSubstring("trust-anchors"))
	g.Expect(res.ConfigData[FilePrimaryConf]).NotTo(ContainSubstring("validate-except"))
	g.Expect(res.ConfigData[FilePrimaryConf]).To(ContainSubstring("forwarders { 198.19.0.53; };"))
}
