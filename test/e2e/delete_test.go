package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
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
	waitClusterReady(ctx, t, ns, a.Name, a.Replicas)
	for _, ip := range podIPs(ctx, t, ns, a.Name, a.Replicas) {
		waitSOA(ctx, t, ip, a.Catalog, "pod "+ip)
	}

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
		must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names[i]}, o.obj))
		if !ownedBy(o.obj, a.Name) {
			t.Errorf("%s %s is not controlled by BindCluster %s: %v", o.what, names[i], a.Name, o.obj.GetOwnerReferences())
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	must(t, env.Client.List(ctx, &pvcs, client.InNamespace(ns)))
	var volumes []string
	for _, c := range pvcs.Items {
		volumes = append(volumes, c.Spec.VolumeName)
	}
	if len(pvcs.Items) != int(a.Replicas) {
		t.Fatalf("want %d claims (one per pod), got %d", a.Replicas, len(pvcs.Items))
	}
	type proc struct {
		pod, container string
		pid            int
		start          string
		netns          string
	}
	var procs []proc
	for i := range a.Replicas {
		pod := fmt.Sprintf("%s-%d", a.Name, i)
		pids := env.Cluster.ContainerPIDs(ns, pod)
		if len(pids) != 2 {
			t.Fatalf("pod %s runs %d containers on the host (%v), want named and agent", pod, len(pids), pids)
		}
		for c, pid := range pids {
			procs = append(procs, proc{pod: pod, container: c, pid: pid, start: procStart(pid), netns: netnsOf(pid)})
		}
	}
	for _, p := range procs {
		if p.start == "" || p.netns == "" {
			t.Fatalf("cannot identify the process or the netns of %s/%s (pid %d)", p.pod, p.container, p.pid)
		}
	}
	t.Logf("before delete: %d claims %v, processes %+v", len(pvcs.Items), volumes, procs)

	var bc v1.BindCluster
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Name}, &bc))
	start := time.Now()
	must(t, env.Client.Delete(ctx, &bc))

	var left []string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		left = left[:0]
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
		if env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1.LabelCluster: a.Name}) != nil ||
			env.Client.List(ctx, &claims, client.InNamespace(ns)) != nil {
			return false, nil
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
				left = append(left, fmt.Sprintf("process %s/%s pid %d", p.pod, p.container, p.pid))
			}
		}
		leftovers := localcluster.Leftovers()
		for _, p := range procs {
			if slices.Contains(leftovers, "netns "+p.netns) {
				left = append(left, "netns "+p.netns)
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Fatalf("%s after deleting the BindCluster, still there: %s", time.Since(start).Round(time.Second), strings.Join(slices.Compact(left), ", "))
	}
	t.Logf("BindCluster deleted: StatefulSet, %d pods, 3 Services, ConfigMap, keys Secret, PDB, NetworkPolicy, %d claims and volumes, %d processes and their netns gone in %s",
		a.Replicas, len(volumes), len(procs), time.Since(start).Round(time.Millisecond))
	for i := range a.Replicas {
		if pids := env.Cluster.ContainerPIDs(ns, fmt.Sprintf("%s-%d", a.Name, i)); len(pids) != 0 {
			t.Errorf("the node still runs containers of %s-%d: %v", a.Name, i, pids)
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

// netnsOf names the network namespace (under /run/netns) a process is in.
func netnsOf(pid int) string {
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st); err != nil {
		return ""
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		var ns syscall.Stat_t
		if syscall.Stat(filepath.Join("/run/netns", e.Name()), &ns) == nil && ns.Ino == st.Ino && ns.Dev == st.Dev {
			return e.Name()
		}
	}
	return ""
}
