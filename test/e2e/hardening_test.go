package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// hardened is what /proc/<pid>/status of a hardened container process
// must show: the pod user, no capability in any set (drop ALL; the
// bounding set too, so nothing can be regained), no_new_privs and a
// seccomp filter (RuntimeDefault).
var hardened = map[string]string{
	"Uid":        fmt.Sprintf("%d\t%d\t%d\t%d", v1.PodUser, v1.PodUser, v1.PodUser, v1.PodUser),
	"Gid":        fmt.Sprintf("%d\t%d\t%d\t%d", v1.PodUser, v1.PodUser, v1.PodUser, v1.PodUser),
	"CapInh":     "0000000000000000",
	"CapPrm":     "0000000000000000",
	"CapEff":     "0000000000000000",
	"CapBnd":     "0000000000000000",
	"CapAmb":     "0000000000000000",
	"NoNewPrivs": "1",
	"Seccomp":    "2",
}

// TestPodsAreHardened reads, on the real node, what the kernel says about
// the running processes of a BIND pod (named and the agent) and of the
// operator's own pod: their uid and gid, capabilities, no_new_privs and
// seccomp mode; that their root filesystems are read-only (a write through
// kubectl exec fails); that the keys Secret's files are readable by the
// pod's group and no one else; that the data volume belongs to the pod's
// group; and that no ServiceAccount token is mounted into BIND pods.
func TestPodsAreHardened(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-hardening")
	a := authoritative{Namespace: ns, Name: "hard", Replicas: 2, Catalog: "catalog.hard.internal", Storage: true}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	waitClusterReady(ctx, t, ns, a.Name, a.Replicas)
	paths := render.DefaultPaths()

	for i := range a.Replicas {
		name := fmt.Sprintf("%s-%d", a.Name, i)
		var pod corev1.Pod
		testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod))
		procs := podProcesses(string(pod.UID))
		byComm := map[string]hostProcess{}
		for _, p := range procs {
			byComm[p.comm] = p
			// Nothing in the pod runs as root, sandbox included.
			g.Expect(procStatus(p.pid)["Uid"]).NotTo(HavePrefix("0\t"), "%s: %s (pid %d) runs as root", name, p.comm, p.pid)
		}
		for comm, container := range map[string]string{"named": "named", "bind-operator": "agent"} {
			p, ok := byComm[comm]
			if !ok {
				t.Errorf("%s: no %s process among %v", name, comm, procs)
				continue
			}
			st := procStatus(p.pid)
			for k, want := range hardened {
				g.Expect(st[k]).To(Equal(want), "%s %s (pid %d): /proc status %s", name, container, p.pid, k)
			}
			t.Logf("%s %s (pid %d): Uid %s, Gid %s, Groups %s, CapEff %s, CapBnd %s, NoNewPrivs %s, Seccomp %s", name, container, p.pid,
				st["Uid"], st["Gid"], st["Groups"], st["CapEff"], st["CapBnd"], st["NoNewPrivs"], st["Seccomp"])

			// No ServiceAccount token: neither container talks to the API server.
			_, err := os.Stat(filepath.Join("/proc", fmt.Sprint(p.pid), "root", "var/run/secrets/kubernetes.io"))
			g.Expect(os.IsNotExist(err)).To(BeTrue(), "%s %s: /var/run/secrets/kubernetes.io exists (err %v)", name, container, err)

			// The root filesystem is read-only.
			out, err := env.Kubectl(ctx, "", "exec", "-n", ns, name, "-c", container, "--", "touch", "/x")
			g.Expect(err).To(HaveOccurred(), "%s %s: touch /x succeeded on the root filesystem", name, container)
			g.Expect(out).To(ContainSubstring("Read-only file system"), "%s %s", name, container)
		}
		for _, vol := range pod.Spec.Volumes {
			g.Expect(vol.Projected).To(BeNil(), "%s: projected volume %s (a ServiceAccount token?)", name, vol.Name)
		}
		g.Expect(pod.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()), "%s: automountServiceAccountToken", name)

		named, ok := byComm["named"]
		if !ok {
			continue
		}
		root := filepath.Join("/proc", fmt.Sprint(named.pid), "root")
		// The keys: root's files, the pod's group may read them, no one
		// else may (mode 0440 with fsGroup).
		entries, err := os.ReadDir(filepath.Join(root, paths.KeysDir))
		testkit.Must(t, err)
		var files []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "..") {
				continue // the kubelet's atomic-writer folders
			}
			var st syscall.Stat_t
			testkit.Must(t, syscall.Stat(filepath.Join(root, paths.KeysDir, e.Name()), &st))
			g.Expect(st.Mode&0o7777).To(Equal(uint32(0o440)), "%s: mode of %s/%s", name, paths.KeysDir, e.Name())
			g.Expect(st.Gid).To(Equal(uint32(v1.PodUser)), "%s: group of %s/%s", name, paths.KeysDir, e.Name())
			files = append(files, e.Name())
		}
		g.Expect(files).NotTo(BeEmpty(), "%s: no files in %s", name, paths.KeysDir)
		// Both containers read them as the pod user (through the group).
		for _, container := range []string{"named", "agent"} {
			script := fmt.Sprintf(`cd %s && for f in %s; do test -r "$f" || echo "cannot read $f"; done; echo checked`, paths.KeysDir, strings.Join(files, " "))
			out, err := env.Kubectl(ctx, "", "exec", "-n", ns, name, "-c", container, "--", "sh", "-c", script)
			testkit.Must(t, err)
			g.Expect(strings.TrimSpace(out)).To(Equal("checked"), "%s %s reads the keys", name, container)
		}
		// The data volume (a claim) belongs to the pod's group.
		var st syscall.Stat_t
		testkit.Must(t, syscall.Stat(filepath.Join(root, paths.DataDir), &st))
		g.Expect(st.Gid).To(Equal(uint32(v1.PodUser)), "%s: group of %s", name, paths.DataDir)
		t.Logf("%s: keys %v mode 0440 group %d; %s group %d; no ServiceAccount token; root filesystems read-only", name, files, v1.PodUser, paths.DataDir, st.Gid)
	}

	// The operator itself.
	pods, err := env.OperatorPods(ctx)
	testkit.Must(t, err)
	g.Expect(pods).NotTo(BeEmpty())
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		var manager *hostProcess
		for _, p := range podProcesses(string(pod.UID)) {
			if p.comm == "bind-operator" {
				manager = &p
			}
		}
		if manager == nil {
			t.Errorf("operator pod %s: no bind-operator process on the host", pod.Name)
			continue
		}
		st := procStatus(manager.pid)
		for k, want := range hardened {
			g.Expect(st[k]).To(Equal(want), "operator %s (pid %d): /proc status %s", pod.Name, manager.pid, k)
		}
		out, err := env.Kubectl(ctx, "", "exec", "-n", OperatorNamespace, pod.Name, "-c", "manager", "--", "touch", "/x")
		g.Expect(err).To(HaveOccurred(), "operator %s: touch /x succeeded on the root filesystem", pod.Name)
		g.Expect(out).To(ContainSubstring("Read-only file system"))
		// Its temporary files go to the /tmp emptyDir (named-checkconf
		// runs on a copy of each render there).
		out, err = env.Kubectl(ctx, "", "exec", "-n", OperatorNamespace, pod.Name, "-c", "manager", "--", "sh", "-c", "touch /tmp/e2e-probe && rm /tmp/e2e-probe && echo writable")
		testkit.Must(t, err)
		g.Expect(strings.TrimSpace(out)).To(Equal("writable"))
		t.Logf("operator %s (pid %d): Uid %s, CapEff %s, CapBnd %s, NoNewPrivs %s, Seccomp %s; root read-only, /tmp writable", pod.Name, manager.pid,
			st["Uid"], st["CapEff"], st["CapBnd"], st["NoNewPrivs"], st["Seccomp"])
	}
}

// procStatus reads /proc/<pid>/status into a map of field → value.
func procStatus(pid int) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}
