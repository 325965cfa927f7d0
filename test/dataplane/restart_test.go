package dataplane

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/bindcluster"
)

// TestOperatorRestartChangesNothing (issue 47 item 4, on a small scale):
// an operator that starts again over zones, catalog members and DNSRecords
// that are all in place looks at every one of them and changes nothing on
// any server: no zone added, modified or deleted through an agent, no
// UPDATE received by any named, every serial where it was.
func TestOperatorRestartChangesNothing(t *testing.T) {
	c := newCluster(t, 2)
	const catalogZones, plainZones, records = 6, zonesInTest - 6, 4
	var names []string
	for i := range catalogZones + plainZones {
		z := &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("z%d", i)}, Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: v1.DomainName(fmt.Sprintf("z%d.restart.test", i)), Type: v1.ZonePrimary,
			UpdateKeyRef: &v1.LocalObjectReference{Name: "upd"},
			Records:      []v1.RecordSet{{Name: "www", Type: "A", Values: []string{fmt.Sprintf("192.0.2.%d", i+1)}}},
		}}
		if i < catalogZones {
			z.Spec.CatalogZoneRef = &v1.LocalObjectReference{Name: "catalog"}
		}
		c.create(z)
		names = append(names, z.Name)
	}
	for i := range records {
		c.create(&v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i)}, Spec: v1.DNSRecordSpec{
			ZoneRef: v1.ZoneReference{Name: "z0"}, Name: v1.RecordName(fmt.Sprintf("api%d", i)), Type: "A", Values: []string{fmt.Sprintf("198.51.100.%d", i+1)},
		}})
	}
	for _, n := range names {
		c.waitZone(n, v1.ReasonServed, 30*time.Second)
	}
	c.waitAll("the last DNSRecord", 20*time.Second, fmt.Sprintf("api%d.z0.restart.test", records-1), dns.TypeA, fmt.Sprintf("198.51.100.%d", records))

	// Settled: the first operator's passes are over when two looks a few
	// seconds apart see the same counters.
	var before map[string]counters
	c.g.Eventually(func(g Gomega) {
		first := c.look(g)
		time.Sleep(3 * time.Second)
		before = c.look(g)
		g.Expect(before).To(Equal(first))
	}).WithTimeout(30*time.Second).WithPolling(time.Millisecond).Should(Succeed(), "the servers settle")

	// The counters see what they must: the records went in by UPDATE,
	// and the primary added every zone.
	prim := before[c.Nodes[0].Name]
	if prim.updates == 0 || !strings.Contains(prim.changes, fmt.Sprintf("added=%d", catalogZones+plainZones)) {
		t.Fatalf("before the restart the primary reports %+v; want UPDATEs and %d zones added", prim, catalogZones+plainZones)
	}
	for name, n := range before {
		if strings.Contains(n.serials, "= ") || strings.HasSuffix(n.serials, "=") {
			t.Fatalf("before the restart %s does not serve every zone: %s", name, n.serials)
		}
	}

	whileNoOperatorRuns(t, func() {})

	// The new operator has looked at everything once each pod's agent has
	// been asked to ensure every zone it holds outside a catalog again
	// (the primary: all of them; a secondary: those outside the catalog).
	want := map[string]float64{}
	for i, n := range c.Nodes {
		want[n.Name] = float64(plainZones)
		if i == 0 {
			want[n.Name] = float64(catalogZones + plainZones)
		}
	}
	var after map[string]counters
	c.g.Eventually(func(g Gomega) {
		after = c.look(g)
		for _, n := range c.Nodes {
			g.Expect(after[n.Name].unchanged-before[n.Name].unchanged).To(BeNumerically(">=", want[n.Name]), "%s: ensures answered unchanged", n.Name)
		}
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "the new operator looks at every zone")
	// And a little longer, for what comes after the ensures (records,
	// SOA, catalog membership, DNSRecords).
	time.Sleep(5 * time.Second)
	after = c.look(NewWithT(t))
	for _, n := range c.Nodes {
		b, a := before[n.Name], after[n.Name]
		if a.changes != b.changes {
			t.Errorf("%s: zones added, modified or deleted through the agent: %v before the restart, %v after", n.Name, b.changes, a.changes)
		}
		if a.updates != b.updates {
			t.Errorf("%s: named received %v UPDATEs after the restart (%v before)", n.Name, a.updates-b.updates, b.updates)
		}
		if a.serials != b.serials || strings.Contains(a.serials, "= ") || strings.HasSuffix(a.serials, "=") {
			t.Errorf("%s: serials moved: %s before the restart, %s after", n.Name, b.serials, a.serials)
		}
	}
	t.Logf("after the restart: %d zones ensured again on the primary, all unchanged; no UPDATE; no serial moved", int(after[c.Nodes[0].Name].unchanged-before[c.Nodes[0].Name].unchanged))
}

// zonesInTest is how many zones TestOperatorRestartChangesNothing makes.
const zonesInTest = 9

// counters are what a node's agent and named report that a change would
// move.
type counters struct {
	unchanged float64 // agent ensures that found the zone as asked
	changes   string  // agent zone operations that changed something, by action
	updates   float64 // UPDATE messages named received
	serials   string  // every zone's serial, in order
}

// look reads every node's counters.
func (c *cluster) look(g Gomega) map[string]counters {
	out := map[string]counters{}
	for _, n := range c.Nodes {
		ops := agentZoneOps(g, n)
		var changes []string
		for _, action := range []string{"added", "modified", "deleted", "error"} {
			changes = append(changes, fmt.Sprintf("%s=%v", action, ops[action]))
		}
		var serials []string
		for i := range zonesInTest {
			name := fmt.Sprintf("z%d.restart.test", i)
			serials = append(serials, fmt.Sprintf("%s=%s", name, strings.Join(served(n.DNSAddr(), name, dns.TypeSOA), "")))
		}
		out[n.Name] = counters{unchanged: ops["unchanged"], changes: strings.Join(changes, " "), updates: namedUpdates(g, n), serials: strings.Join(serials, " ")}
	}
	return out
}

// loopback reads a node's agent metrics and named's statistics, bounded.
var loopback = &http.Client{Timeout: 5 * time.Second}

// agentZoneOps reads bind_agent_zone_operations_total by action.
func agentZoneOps(g Gomega, n *bindcluster.Node) map[string]float64 {
	resp, err := loopback.Get(n.MetricsURL()) //nolint:noctx // loopback, bounded by the client's timeout
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, 4<<20))
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	if f, ok := families["bind_agent_zone_operations_total"]; ok {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "action" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// namedUpdates reads how many UPDATE messages named received.
func namedUpdates(g Gomega, n *bindcluster.Node) float64 {
	resp, err := loopback.Get(n.StatisticsURL()) //nolint:noctx // loopback, bounded by the client's timeout
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var stats struct {
		Opcodes map[string]float64 `json:"opcodes"`
	}
	g.Expect(json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&stats)).To(Succeed())
	return stats.Opcodes["UPDATE"]
}
