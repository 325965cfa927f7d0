// Package dataplane runs the zone controllers against real BIND: an
// envtest API server with the manager, and a bindcluster (a primary plus
// secondaries as real named processes on loopback, each with its pod agent
// over mutual TLS) standing in for the BindCluster's pods. Its secondaries
// transfer from [::1] while NOTIFYs leave from 127.0.0.1, so every change
// seen on a secondary here arrived through a signed NOTIFY from a
// non-primary address (docs/behaviours.md, "Keyed NOTIFY").
package dataplane

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/bindcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// cluster is a BindCluster in the API server whose pods run on loopback.
type cluster struct {
	*bindcluster.Cluster
	t    *testing.T
	g    *WithT
	ns   string
	name string
	keys map[string]render.TSIGKey
}

// endpoints routes each test namespace's cluster to its loopback pods: the
// controllers' seam where production lists Pods and reads the Service.
type endpoints struct {
	mu       sync.Mutex
	clusters map[string]*cluster
}

var eps = &endpoints{clusters: map[string]*cluster{}}

func (e *endpoints) get(c *v1.BindCluster) (*cluster, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	cl, ok := e.clusters[c.Namespace+"/"+c.Name]
	if !ok {
		return nil, fmt.Errorf("no loopback pods for cluster %s/%s", c.Namespace, c.Name)
	}
	return cl, nil
}

func (e *endpoints) Pods(_ context.Context, c *v1.BindCluster) ([]clusterpods.PodEndpoint, error) {
	cl, err := e.get(c)
	if err != nil {
		return nil, err
	}
	out := make([]clusterpods.PodEndpoint, 0, len(cl.Nodes))
	for _, n := range cl.Nodes {
		out = append(out, clusterpods.PodEndpoint{Pod: n.Name, Primary: n.Primary, Notify: n.DNSAddr(), DNSAddr: n.DNSAddr(), AgentAddr: n.AgentAddr(), Paths: &n.Paths})
	}
	return out, nil
}

func (e *endpoints) Transfer(_ context.Context, c *v1.BindCluster) (string, int32, error) {
	cl, err := e.get(c)
	if err != nil {
		return "", 0, err
	}
	host, port := cl.Transfer()
	return host, port, nil
}

var nsSeq int

// newCluster creates a namespace with keys K ("transfer") and U ("upd"), a
// BindCluster, a BindCatalogZone and the agent CA Secret, and starts a
// primary and `secondaries` secondaries rendered from those objects.
func newCluster(t *testing.T, secondaries int) *cluster {
	t.Helper()
	nsSeq++
	c := &cluster{t: t, g: NewWithT(t), ns: fmt.Sprintf("dp-%d-%d", os.Getpid()%1000, nsSeq), name: "dns", keys: map[string]render.TSIGKey{}}
	testkit.Must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}))
	for _, k := range []string{"transfer", "upd"} {
		secret := newSecret()
		c.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: k + "-tsig"}, Data: map[string][]byte{v1.TSIGSecretKey: []byte(secret)}})
		c.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: k}, Spec: v1.BindTSIGKeySpec{ImportExisting: true, SecretName: k + "-tsig", Algorithm: "hmac-sha256"}})
		c.keys[k] = render.TSIGKey{Name: k, Algorithm: "hmac-sha256", Secret: secret}
	}
	cl := &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Spec: v1.BindClusterSpec{
		Mode: v1.ModeAuthoritative, Replicas: ptr.To(int32(1 + secondaries)), TransferKeyRef: &v1.LocalObjectReference{Name: "transfer"},
	}}
	c.create(cl)
	catalog := &v1.BindCatalogZone{ObjectMeta: metav1.ObjectMeta{Name: "catalog"}, Spec: v1.BindCatalogZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "catalog.example.internal", TransferKeyRef: v1.LocalObjectReference{Name: "transfer"},
	}}
	c.create(catalog)
	// Readiness every 200 ms: status waits below are seconds long.
	c.Cluster = bindcluster.Start(t, bindcluster.Options{Cluster: cl, Keys: c.keys, Catalogs: []v1.BindCatalogZone{*catalog}, ReadyInterval: 200 * time.Millisecond})
	op, err := agent.IssueClient(c.CA, "bind-operator", 0)
	testkit.Must(t, err)
	c.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: c.name + "-agent-ca"}, Data: map[string][]byte{
		agent.FileCA: c.CA.CertPEM, agent.FileCAKey: c.CA.KeyPEM, agent.FileClientCert: op.CertPEM, agent.FileClientKey: op.KeyPEM,
	}})
	eps.mu.Lock()
	eps.clusters[c.ns+"/"+c.name] = c
	eps.mu.Unlock()
	// Runs before bindcluster's own cleanup (LIFO): the finalizers need
	// named still up.
	t.Cleanup(func() {
		var zones v1.BindZoneList
		_ = k8s.List(ctx, &zones, client.InNamespace(c.ns))
		if t.Failed() {
			for _, z := range zones.Items {
				t.Logf("BindZone %s status: %+v", z.Name, z.Status)
			}
		}
		for i := range zones.Items {
			_ = k8s.Delete(ctx, &zones.Items[i])
		}
		// Best effort, bounded: the zones' finalizers get their chance, and
		// the namespace goes either way.
		bestEffort := NewGomega(func(string, ...int) {})
		bestEffort.Eventually(func(g Gomega) []v1.BindZone {
			var l v1.BindZoneList
			g.Expect(k8s.List(ctx, &l, client.InNamespace(c.ns))).To(Succeed())
			return l.Items
		}).WithTimeout(15 * time.Second).WithPolling(100 * time.Millisecond).Should(BeEmpty())
		_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}})
	})
	return c
}

func (c *cluster) create(obj client.Object) {
	c.t.Helper()
	obj.SetNamespace(c.ns)
	testkit.Must(c.t, k8s.Create(ctx, obj))
}
