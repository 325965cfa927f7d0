package localcluster_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/format"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"git.unkin.net/unkin/bind-operator/test/localcluster"
)

const crashChildEnv = "BIND_LOCALCLUSTER_CRASH_CHILD"

// TestCrashChild is the process TestStartSweepsAfterCrash kills: it starts
// a cluster with a running pod, says so, and waits to be killed.
func TestCrashChild(t *testing.T) {
	if os.Getenv(crashChildEnv) == "" {
		t.Skip("run by TestStartSweepsAfterCrash")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Client().CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers: []corev1.Container{{
				Name: "named", Image: bindImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sleep", "600"},
			}},
		},
	}, metav1.CreateOptions{})
	if err == nil {
		_, err = c.WaitPodReady(ctx, "default", "sleeper", 2*time.Minute)
	}
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("CLUSTER-UP\n")
	<-ctx.Done() // killed long before
}

// TestStartSweepsAfterCrash kills a process that runs a cluster with
// SIGKILL — no Stop, no deferred cleanup — and checks that the next Start
// removes what it left (the kubelet's containers, containerd's shims,
// mounts, the bridge, nftables tables, cgroups, sysctls) so that after its
// own Stop the host is as it was.
func TestStartSweepsAfterCrash(t *testing.T) {
	g := NewWithT(t)
	format.MaxLength = 0 // a failure lists every leftover
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Snapshots compare only while no other cluster runs; the child takes
	// the lock itself once this test lets it go.
	lock, err := localcluster.LockHost(ctx, 10*time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lock.SweepLeftovers(ctx, t.Logf)).To(Succeed())
	before := localcluster.TakeHostSnapshot(ctx)
	lock.Unlock()

	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	child.Env = append(os.Environ(), crashChildEnv+"=1")
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(child.Start()).To(Succeed())
	up := make(chan bool, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			t.Log("child: " + s.Text())
			if strings.Contains(s.Text(), "CLUSTER-UP") {
				up <- true
			}
		}
		close(up)
	}()
	g.Expect(<-up).To(BeTrue(), "the child never brought its cluster up")
	g.Expect(child.Process.Signal(syscall.SIGKILL)).To(Succeed())
	_ = child.Wait()
	lock, err = localcluster.LockHost(ctx, 10*time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	defer lock.Unlock()

	// Pdeathsig took the control plane down with the child; the
	// containers, daemonised shims and host settings are still there.
	// (SIGKILL takes a moment to land.)
	g.Eventually(func() []string {
		return before.Added(localcluster.TakeHostSnapshot(ctx))
	}).WithTimeout(20 * time.Second).Should(SatisfyAll(
		ContainElement(HavePrefix("link: "+localcluster.BridgeName)),
		ContainElement(HavePrefix("cgroup: ")),
		Not(ContainElement(HaveSuffix(" kube-apiserver"))),
		Not(ContainElement(HaveSuffix(" etcd"))),
	))

	c, err := localcluster.Start(ctx, localcluster.Options{Logf: t.Logf, HostLock: lock})
	g.Expect(err).NotTo(HaveOccurred())
	c.Stop()
	g.Expect(before.Added(localcluster.TakeHostSnapshot(ctx))).To(BeEmpty(), "the host after a crash, Start and Stop differs from before")
}
