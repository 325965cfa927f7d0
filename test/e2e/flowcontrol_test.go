package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leaderElectionFlowSchema is config/manager/flowschema.yaml as the
// overlays name it.
const leaderElectionFlowSchema = "bind-operator-leader-election"

// TestLeaderElectionPriority: the API server files the manager's Lease
// renewals under the shipped FlowSchema, in the leader-election priority
// level, not in workload-low behind the manager's own writes. The schema
// names the ServiceAccount as the overlays make it (kustomize does not
// rewrite FlowSchema subjects), so a renamed ServiceAccount or namespace
// fails here.
func TestLeaderElectionPriority(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := NewWithT(t)
	var fs flowcontrolv1.FlowSchema
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: leaderElectionFlowSchema}, &fs)).To(Succeed(), "the overlay installs the FlowSchema")
	g.Expect(fs.Spec.PriorityLevelConfiguration.Name).To(Equal("leader-election"))
	for _, c := range fs.Status.Conditions {
		if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
			g.Expect(c.Status).To(Equal(flowcontrolv1.ConditionFalse), "the priority level exists: %s", c.Message)
		}
	}
	// The leader renews every 2 s: within a few seconds its requests show.
	g.Eventually(func() float64 {
		var n float64
		for _, m := range apiServerMetrics(ctx, t)["apiserver_flowcontrol_dispatched_requests_total"].GetMetric() {
			if l := metricLabels(m); l["flow_schema"] == leaderElectionFlowSchema && l["priority_level"] == "leader-election" {
				n += m.GetCounter().GetValue()
			}
		}
		return n
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2*time.Second).Should(BeNumerically(">", 0),
		"no request of the manager was dispatched under FlowSchema %s", leaderElectionFlowSchema)
}
