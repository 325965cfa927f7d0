package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestDataVolumeInMemory: a cluster without claims whose storage.medium is
// Memory keeps named's data directory on a tmpfs of storage.sizeLimit, on
// the real kubelet, and that data outlives named's container as it does on
// disk: named SIGKILLed in the primary, then in a secondary, comes back
// serving a DNSRecord's data, the primary does not start the zone afresh
// from its seed (status.primarySeededAt unchanged), and an edit made after
// both restarts reaches both pods.
func TestDataVolumeInMemory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-memory")
	a := authoritative{Namespace: ns, Name: "inmemory", Replicas: 2, Catalog: "catalog.inmemory.internal", Mutate: func(c *v1.BindCluster) {
		c.Spec.Storage.Medium = v1.StorageMediumMemory
		c.Spec.Storage.SizeLimit = ptr.To(resource.MustParse("64Mi"))
	}}
	a.create(ctx, t)
	const zone = "memory.e2e.example"
	testkit.Must(t, env.Client.Create(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "updates"}}))
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("zone", zone, "updates")))
	rec := &v1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: "zone"}, Name: "api", Type: "A",
			TTL: ptr.To[v1.TTL](60), Values: []string{"192.0.2.81"}},
	}
	testkit.Must(t, env.Client.Create(ctx, rec))
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	ips := a.servedByAll(ctx, t, zone)
	pods := []string{a.Name + "-0", a.Name + "-1"}
	for i, ip := range ips {
		waitA(ctx, t, ip, "api."+zone, "192.0.2.81", pods[i])
	}

	g := NewWithT(t)
	dataDir := render.DefaultPaths().DataDir
	for _, pod := range pods {
		fstype, options := podMount(ctx, t, ns, pod, "named", dataDir)
		g.Expect(fstype).To(Equal("tmpfs"), "%s's %s", pod, dataDir)
		// 64Mi: the kubelet sizes the tmpfs to the volume's sizeLimit.
		g.Expect(strings.Split(options, ",")).To(ContainElement("size=65536k"), "%s's %s mount options", pod, dataDir)
	}

	seededAt := func() *metav1.Time {
		var z v1.BindZone
		testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "zone"}, &z))
		return z.Status.PrimarySeededAt
	}
	seeded := seededAt()
	g.Expect(seeded).NotTo(BeNil(), "the zone is served, so the primary has reported when it seeded it")
	for i, pod := range pods {
		p, err := env.Cluster.Client().CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		testkit.Must(t, err)
		killProcess(ctx, t, string(p.UID), "named", pod)
		// The same pod, so the same IP: only the container restarted.
		waitA(ctx, t, ips[i], "api."+zone, "192.0.2.81", pod+" after named was killed")
	}
	g.Expect(seededAt()).To(Equal(seeded), "the primary started the zone afresh from its seed: its data did not survive named's restart")

	patch := client.MergeFrom(rec.DeepCopy())
	rec.Spec.Values = []string{"192.0.2.82"}
	testkit.Must(t, env.Client.Patch(ctx, rec, patch))
	for i, ip := range ips {
		waitA(ctx, t, ip, "api."+zone, "192.0.2.82", pods[i]+" after the edit")
	}
}

// podMount is the filesystem type and mount options of dir as the process
// named comm in a pod sees it (its /proc/<pid>/mounts on this node).
func podMount(ctx context.Context, t *testing.T, namespace, pod, comm, dir string) (fstype, options string) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mounts", podProcess(ctx, t, namespace, pod, comm).pid))
	testkit.Must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		// device mountpoint fstype options dump pass
		if f := strings.Fields(line); len(f) >= 4 && f[1] == dir {
			return f[2], f[3]
		}
	}
	t.Fatalf("%s in pod %s/%s has no mount at %s:\n%s", comm, namespace, pod, dir, b)
	return "", ""
}
