package zones

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// What the primary's agent heard from each external secondary becomes
// its status entry, in spec order: in sync, behind (it answers), refusing
// and silent (it does not serve the zone), and one the agent gave no
// outcome for.
func TestExternalStatus(t *testing.T) {
	g := NewWithT(t)
	servers := []bindv1alpha1.RemoteServer{
		{Address: "198.18.0.1", Port: ptr.To[int32](5353)},
		{Address: "2001:db8::1"},
		{Address: "198.18.0.3"},
		{Address: "198.18.0.4"},
		{Address: "198.18.0.5"},
	}
	outcomes := []agent.ProbeOutcome{
		{Server: "198.18.0.1:5353", Serial: 7},
		{Server: "[2001:db8::1]:53", Serial: 6},
		{Server: "198.18.0.3:53", Error: "SOA query: dns query example.com. SOA: REFUSED"},
		{Server: "198.18.0.4:53", Error: "SOA query: i/o timeout"},
	}
	st, failing, behind := externalStatus(servers, outcomes, 7, "example.com")
	g.Expect(st).To(HaveLen(5))
	g.Expect(st[0]).To(Equal(bindv1alpha1.ExternalSecondaryStatus{Server: "198.18.0.1:5353", Serial: ptr.To[int64](7), InSync: true}))
	g.Expect(st[1]).To(Equal(bindv1alpha1.ExternalSecondaryStatus{Server: "[2001:db8::1]:53", Serial: ptr.To[int64](6), Message: "serves serial 6, the primary 7"}))
	g.Expect(st[2].Serial).To(BeNil())
	g.Expect(st[2].Message).To(HavePrefix("asked for the SOA of example.com: SOA query: dns query example.com. SOA: REFUSED; it does not serve the zone"))
	g.Expect(st[3].Message).To(ContainSubstring("i/o timeout"))
	g.Expect(st[4].Message).To(ContainSubstring("no answer"))
	g.Expect(behind).To(Equal([]string{"[2001:db8::1]:53 serves serial 6, the primary 7"}))
	g.Expect(failing).To(HaveLen(3))
	g.Expect(failing[0]).To(HavePrefix("198.18.0.3:53 asked for the SOA"))

	// Ahead of a status.serial read before the last UPDATE: in sync.
	st, failing, behind = externalStatus(servers[:1], []agent.ProbeOutcome{{Serial: 8}}, 7, "example.com")
	g.Expect(st[0].InSync).To(BeTrue())
	g.Expect(failing).To(BeEmpty())
	g.Expect(behind).To(BeEmpty())

	// Nobody asked: every server says why, and none counts as failing,
	// since nothing was learnt about them.
	status := &bindv1alpha1.BindZoneStatus{}
	failing, behind = externalUnasked(status, servers[:2], "the agent is down")
	g.Expect(behind).To(BeEmpty())
	g.Expect(failing).To(BeEmpty())
	g.Expect(status.ExternalSecondaries[1]).To(Equal(bindv1alpha1.ExternalSecondaryStatus{Server: "[2001:db8::1]:53", Message: "not asked: the agent is down"}))
}
