package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSamples applies config/samples to a real local cluster with the
// operator and its webhooks, and checks what a user would: every BIND pod of
// the authoritative cluster becomes ready and serves the catalog zone (the
// secondaries through a keyed transfer from the primary Service) and the
// sample zone with its records and the sample DNSRecord, and a
// broken object applied with kubectl is refused with the webhook's message.
func TestSamples(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "samples")

	if _, err := env.ApplySamples(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cluster := waitClusterReady(ctx, t, ns, "authoritative", 3)

	var primarySvc corev1.Service
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "authoritative-primary"}, &primarySvc))
	if cluster.Status.PrimaryAddress != primarySvc.Spec.ClusterIP {
		t.Errorf("primaryAddress = %q, want the primary Service ClusterIP %q", cluster.Status.PrimaryAddress, primarySvc.Spec.ClusterIP)
	}

	// The catalog zone is config-level: the primary loads it from its seed,
	// each secondary transfers it, keyed, from the primary Service.
	servers := map[string]string{}
	for i, ip := range podIPs(ctx, t, ns, "authoritative", 3) {
		servers[fmt.Sprintf("authoritative-%d", i)] = ip
	}
	queryIP, err := env.Cluster.ServiceIP(ctx, ns, "authoritative")
	must(t, err)
	servers["query Service"] = queryIP
	for name, ip := range servers {
		waitSOA(ctx, t, ip, "catalog.example.internal.", name)
	}
	// The primary zone example.com is created through the primary's agent
	// (its in-zone MNAME ns1 loads with the glue from spec.records), reaches
	// the secondaries as a catalog member, and serves its inline records and
	// the sample DNSRecord everywhere.
	for name, ip := range servers {
		waitSOA(ctx, t, ip, "example.com.", name)
		waitA(ctx, t, ip, "mail.example.com.", "192.0.2.25", name)
		waitA(ctx, t, ip, "api.example.com.", "192.0.2.80", name)
	}

	// A broken object is refused by the webhook, through a real kubectl.
	out, err := kubectl(ctx, t, `apiVersion: bind.unkin.net/v1alpha1
kind: BindCluster
metadata: {name: sneaky, namespace: `+ns+`}
spec:
  extraOptions: ['also-notify { 198.18.0.42; };']
`, "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.extraOptions[0]") || !strings.Contains(out, "key") {
		t.Fatalf("kubectl apply of a pod-IP option should be refused by the webhook with a field path and the keyed alternative; got err=%v:\n%s", err, out)
	}
	t.Logf("kubectl refused the broken object:\n%s", out)
}
