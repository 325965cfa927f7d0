package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestDeleteClusterCollectsEverything (issue 6 h): deleting a BindCluster
// garbage-collects everything it owned — StatefulSet, pods, the three
// Services, ConfigMap, keys Secret, PDB, NetworkPolicy and, through the
// StatefulSet's claim retention policy, the PVCs and their volumes — and
// the pods' processes and network namespaces are gone from the host. What
// it did not own (the TSIG key's Secret) stays.
func TestDeleteClusterCollectsEverything(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-delete")
	a := authoritative{Namespace: ns, Name: "doomed", Replicas: 2, Catalog: "catalog.doomed.internal", Storage: true}
	a.create(ctx, t)
	a.servedByAll(ctx, t, a.Catalog)

	// What the cluster owns, as the API lists it.
	owned := []struct {
		what string
		obj  client.Object
	}{
		{"StatefulSet", &appsv1.StatefulSet{}},
		{"Service", &corev1.Service{}},
		{"Service", &corev1.Service{}},
		{"Service", &corev1.Service{}},
		{"ConfigMap", &corev1.ConfigMap{}},
		{"Secret", &corev1.Secret{}},
		{"PodDisruptionBudget", &policyv1.PodDisruptionBudget{}},
		{"NetworkPolicy", &networkingv1.NetworkPolicy{}},
	}
	names := []string{a.Name, a.Name + "-pods", a.Name + "-primary", a.Name, a.Name + "-config", a.Name + "-keys", a.Name, a.Name}
	for i, o := range owned {
		testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names[i]}, o.obj))
		if !ownedBy(o.obj, a.Name) {
			t.Errorf("%s %s is not controlled by BindCluster %s: %v", o.what, names[i], a.Name, o.obj.GetOwnerReferences())
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	testkit.Must(t, env.Client.List(ctx, &pvcs, client.InNamespace(ns)))
	var volumes []string
	for _, c := range pvcs.Items {
		volumes = append(volumes, c.Spec.VolumeName)
	}
	if len(pvcs.Items) != int(a.Replicas) {
		t.Fatalf("want %d claims (one per pod), got %d", a.Replicas, len(pvcs.Items))
	}
	var pods corev1.PodList
	testkit.Must(t, env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1.LabelCluster: a.Name}))
	var procs []hostProcess
	netns := map[string]bool{}
	for _, p := range pods.Items {
		ps := podProcesses(string(p.UID))
		var comms []string
		for _, hp := range ps {
			comms = append(comms, hp.comm)
			netns[hp.netns] = true
		}
		if !slices.Contains(comms, "named") || !slices.Contains(comms, "bind-operator") {
			t.Fatalf("pod %s runs %v on the host, want named and the agent (bind-operator) among them", p.Name, comms)
		}
		procs = append(procs, ps...)
	}
	// A network namespace is known by its inode and the sandbox mount that
	// pins it: the kernel reuses a freed inode for the next pod's namespace
	// (other tests run in parallel), so after the delete only these mounts
	// and the processes above count as left over.
	pinned := map[string][]string{}
	for n := range netns {
		for _, h := range netnsHolders(n) {
			if strings.HasPrefix(h, "mount ") {
				pinned[n] = append(pinned[n], h)
			}
		}
	}
	t.Logf("before delete: %d claims %v; %d processes on the host in %d network namespaces", len(pvcs.Items), volumes, len(procs), len(netns))

	var bc v1.BindCluster
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Name}, &bc))
	start := time.Now()
	testkit.Must(t, env.Client.Delete(ctx, &bc))

	NewWithT(t).Eventually(func() []string {
		var left []string
		exists := func(what string, obj client.Object, name string) {
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
			if !apierrors.IsNotFound(err) {
				left = append(left, what+" "+name)
			}
		}
		exists("BindCluster", &v1.BindCluster{}, a.Name)
		for i, o := range owned {
			exists(o.what, o.obj.DeepCopyObject().(client.Object), names[i])
		}
		var pods corev1.PodList
		var claims corev1.PersistentVolumeClaimList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1.LabelCluster: a.Name}); err != nil {
			return []string{err.Error()}
		}
		if err := env.Client.List(ctx, &claims, client.InNamespace(ns)); err != nil {
			return []string{err.Error()}
		}
		for _, p := range pods.Items {
			left = append(left, "Pod "+p.Name)
		}
		for _, c := range claims.Items {
			left = append(left, "PersistentVolumeClaim "+c.Name)
		}
		for _, v := range volumes {
			exists("PersistentVolume", &corev1.PersistentVolume{}, v)
		}
		for _, p := range procs {
			if procStart(p.pid) == p.start {
				left = append(left, fmt.Sprintf("process %s pid %d", p.comm, p.pid))
			}
		}
		for n := range netns {
			var still []string
			for _, h := range netnsHolders(n) {
				if slices.Contains(pinned[n], h) {
					still = append(still, h)
				}
			}
			if len(still) > 0 {
				left = append(left, fmt.Sprintf("network namespace %s (%s)", n, strings.Join(still, ", ")))
			}
		}
		return slices.Compact(left)
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(BeEmpty(), "still there after deleting the BindCluster")
	t.Logf("BindCluster deleted: StatefulSet, %d pods, 3 Services, ConfigMap, keys Secret, PDB, NetworkPolicy, %d claims and volumes, %d processes and %d network namespaces gone in %s",
		a.Replicas, len(volumes), len(procs), len(netns), time.Since(start).Round(time.Millisecond))
	for _, p := range pods.Items {
		if pids := localcluster.PodUIDPIDs(string(p.UID)); len(pids) != 0 {
			t.Errorf("the node's cgroups of %s still hold processes: %v", p.Name, pids)
		}
	}

	// Not owned by the cluster: the TSIG key and its Secret stay.
	var keySecret corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.transferKey() + "-tsig"}, &keySecret); err != nil {
		t.Errorf("the transfer key's Secret, owned by the BindTSIGKey and not the cluster, was removed: %v", err)
	}
}

func ownedBy(o client.Object, cluster string) bool {
	for _, r := range o.GetOwnerReferences() {
		if r.Kind == "BindCluster" && r.Name == cluster && r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}

// procStart is a process' start time ("" when it is gone or a zombie), so
// a recorded PID is never confused with a new process.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}

// hostProcess is a process of a pod as the host sees it.
type hostProcess struct {
	pid   int
	comm  string
	start string // procStart, so a reused PID is never taken for it
	netns string // "net:[inode]"
}

// podProcess is the host process named comm in the pod namespace/pod on
// this node; the test fails when there is none.
func podProcess(ctx context.Context, t *testing.T, namespace, pod, comm string) hostProcess {
	t.Helper()
	p, err := env.Cluster.Client().CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	testkit.Must(t, err)
	for _, hp := range podProcesses(string(p.UID)) {
		if hp.comm == comm {
			return hp
		}
	}
	t.Fatalf("no %s process in pod %s/%s on this node", comm, namespace, pod)
	return hostProcess{}
}

// podProcesses lists the host processes in the cgroups of the pod with
// this UID (containers and sandbox).
func podProcesses(uid string) []hostProcess {
	var out []hostProcess
	for _, pid := range localcluster.PodUIDPIDs(uid) {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue
		}
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		out = append(out, hostProcess{pid: pid, comm: strings.TrimSpace(string(comm)), start: procStart(pid), netns: ns})
	}
	return out
}

// netnsHolders names what keeps a network namespace ("net:[inode]") alive
// on the host: processes in it and bind mounts of it (the runtime pins a
// pod's namespace with a mount).
func netnsHolders(ns string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if l, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net")); err == nil && l == ns {
			comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
			out = append(out, fmt.Sprintf("pid %s %s", e.Name(), strings.TrimSpace(string(comm))))
		}
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			// Field 4 is the mount's root: "net:[inode]" for a pinned netns.
			if f := strings.Fields(line); len(f) > 4 && f[3] == ns {
				out = append(out, "mount "+f[4])
			}
		}
	}
	return out
}
