package localcluster

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// crashChildEnv makes TestCrashChild start a cluster with one pod and then
// wait to be killed.
const crashChildEnv = "LOCALCLUSTER_CRASH_CHILD"

func TestCrashChild(t *testing.T) {
	if os.Getenv(crashChildEnv) == "" {
		t.Skip("helper of TestStartSweepsAfterCrash")
	}
	ctx := context.Background()
	c, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "s", Image: BindImage, Command: []string{"sleep", "300"},
			VolumeMounts: []corev1.VolumeMount{{Name: "e", MountPath: "/var/lib/lc-crash/deep"}}}},
			Volumes: []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	if _, err := c.Client().CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitPodReady(ctx, "default", "victim", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("READY " + c.WorkDir() + "\n")
	time.Sleep(2 * time.Minute) // killed long before
}

// A harness killed with SIGKILL leaves a namespace, the bridge, a mount
// point and its work folder; its container processes die with it
// (Pdeathsig); the next Start removes the rest.
func TestStartSweepsAfterCrash(t *testing.T) {
	requireEnv(t)
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), crashChildEnv+"=1")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlives this test
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if w, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- w
			}
		}
	}()
	var work string
	select {
	case work = <-ready:
	case <-time.After(defaultLockWait + 90*time.Second):
		// The child may first wait for another package's cluster to stop.
		t.Fatal("child cluster did not come up")
	}
	if len(Leftovers()) == 0 {
		t.Fatal("child made no namespace or link")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	checkContainersDied(t)
	orphans := controlPlaneOrphans()
	if len(orphans) == 0 {
		t.Fatal("expected the killed harness' etcd and kube-apiserver to be orphaned")
	}

	c, err := Start(context.Background(), Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	c.Stop()
	if left := Leftovers(); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	for _, pid := range orphans {
		if processAlive(pid) {
			t.Fatalf("orphaned control-plane process %d survived the sweep", pid)
		}
	}
	for _, p := range []string{work, "/var/lib/lc-crash/deep", "/var/lib/lc-crash"} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s survived the sweep", p)
		}
	}
}

// checkContainersDied: container processes die with their harness (Pdeathsig).
func checkContainersDied(t *testing.T) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		alive := ""
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), "sleep\x00300") {
				alive = e.Name()
			}
		}
		if alive == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("container process %s survived its harness", alive)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// controlPlaneOrphans are the processes the killed child recorded.
func controlPlaneOrphans() []int {
	b, _ := os.ReadFile(createdLog)
	var out []int
	for _, l := range strings.Fields(string(b)) {
		if pid, st, ok := parsePidEntry(l); ok && startTime(pid) == st {
			out = append(out, pid)
		}
	}
	return out
}
