package localcluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const testNamedConf = `options {
	directory "/var/lib/lc-test";
	listen-on port 53 { any; };
	listen-on-v6 { none; };
	pid-file none;
	recursion no;
	notify no;
};
controls { };
zone "example.test" { type primary; file "/var/lib/lc-test/example.test.zone"; };
`

const testZone = `$TTL 60
@	IN SOA ns.example.test. admin.example.test. 1 300 60 1209600 60
@	IN NS ns.example.test.
ns	IN A 198.18.0.1
host	IN TXT "@HOST@"
uts	IN TXT "@UTS@"
boots	IN TXT "@BOOTS@"
prestops	IN TXT "@PRESTOPS@"
`

// The named container counts its boots and the preStop hooks that ran in
// its claim, and publishes them (with HOSTNAME and the UTS hostname) as TXT
// records, so the test can see from the host what happened inside.
const testEntrypoint = `set -eu
d=/var/lib/lc-test
echo boot >> $d/boots
touch $d/prestop
sed -e "s/@HOST@/$HOSTNAME/" -e "s/@UTS@/$(hostname)/" -e "s/@BOOTS@/$(wc -l < $d/boots)/" \
    -e "s/@PRESTOPS@/$(wc -l < $d/prestop)/" /etc/lc-test/zone.in > $d/example.test.zone
exec named -g -c /etc/lc-test/named.conf
`

func requireEnv(t *testing.T) {
	t.Helper()
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	if bin == "" {
		bin = filepath.Join(RepoRoot(), "bin", "k8s")
	}
	if _, err := os.Stat(filepath.Join(bin, "kube-controller-manager")); err != nil && os.Getenv("LOCALCLUSTER_REQUIRE") == "" {
		t.Skipf("kube-controller-manager not built in %s: run `hack/build-k8s-binaries.sh bin/k8s kube-controller-manager` (set LOCALCLUSTER_REQUIRE=1 to fail instead)", bin)
	}
}

func txt(t *testing.T, server, name string, tcp bool) string {
	t.Helper()
	q := Dig
	if tcp {
		q = DigTCP
	}
	var last error
	for i := 0; i < 20; i++ {
		r, err := q(server, name, dns.TypeTXT)
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 {
			return strings.Join(r.Answer[0].(*dns.TXT).Txt, "")
		}
		last = err
		if err == nil {
			last = fmt.Errorf("rcode %s, %d answers", dns.RcodeToString[r.Rcode], len(r.Answer))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("TXT %s @%s (tcp=%v): %v", name, server, tcp, last)
	return ""
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s: %s", what, timeout, last)
}

func TestStatefulSetPodsServicesAndCleanup(t *testing.T) {
	requireEnv(t)
	ctx := context.Background()
	t0 := time.Now()
	c, err := Start(ctx, Options{Logf: t.Logf, RequireNamed: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Logf("cluster started in %s; workdir %s", time.Since(t0).Round(time.Millisecond), c.WorkDir())
	cs := c.Client()
	ns := "default"
	labels := map[string]string{"app": "lc-named"}

	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "lc-named"},
		Data:       map[string]string{"named.conf": testNamedConf, "zone.in": testZone, "entrypoint.sh": testEntrypoint},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dnsPorts := []corev1.ServicePort{
		{Name: "dns-udp", Port: 53, TargetPort: intstr.FromInt32(53), Protocol: corev1.ProtocolUDP},
		{Name: "dns-tcp", Port: 53, TargetPort: intstr.FromInt32(53), Protocol: corev1.ProtocolTCP},
	}
	for _, s := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "lc-named"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: dnsPorts, PublishNotReadyAddresses: true}},
		{ObjectMeta: metav1.ObjectMeta{Name: "lc-dns"}, Spec: corev1.ServiceSpec{Selector: labels, Ports: dnsPorts}},
		{ObjectMeta: metav1.ObjectMeta{Name: "lc-dns-all"}, Spec: corev1.ServiceSpec{Selector: labels, Ports: dnsPorts, PublishNotReadyAddresses: true}},
	} {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svcIP, err := c.ServiceIP(ctx, ns, "lc-dns")
	if err != nil {
		t.Fatal(err)
	}
	allIP, _ := c.ServiceIP(ctx, ns, "lc-dns-all")
	if !serviceCIDR.Contains(netip.MustParseAddr(svcIP)) {
		t.Fatalf("ClusterIP %s outside %s", svcIP, ServiceCIDR)
	}

	mounts := []corev1.VolumeMount{
		{Name: "conf", MountPath: "/etc/lc-test", ReadOnly: true},
		{Name: "data", MountPath: "/var/lib/lc-test"},
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "lc-named"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptrInt32(2),
			ServiceName: "lc-named",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptrInt64(3),
					Containers: []corev1.Container{
						{
							Name: "named", Image: "docker.io/internetsystemsconsortium/bind9:9.18",
							Command:      []string{"/bin/sh", "/etc/lc-test/entrypoint.sh"},
							VolumeMounts: mounts,
							ReadinessProbe: &corev1.Probe{
								ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c",
									"dig +short +time=1 +tries=1 @127.0.0.1 host.example.test TXT | grep -q ."}}},
								PeriodSeconds: 1, TimeoutSeconds: 3,
							},
							LivenessProbe: &corev1.Probe{
								ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(53)}},
								PeriodSeconds: 2, FailureThreshold: 5, InitialDelaySeconds: 2,
							},
							Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
								Command: []string{"/bin/sh", "-c", "echo stop >> /var/lib/lc-test/prestop"}}}},
						},
						{
							// Reaches a ClusterIP from inside the pod: its
							// readiness is a query through the proxy.
							Name: "client", Image: "docker.io/internetsystemsconsortium/bind9:9.18",
							Command:      []string{"sleep", "600"},
							Env:          []corev1.EnvVar{{Name: "SVC_IP", Value: allIP}},
							VolumeMounts: mounts[:1],
							// Dies when the ConfigMap gains the key "die":
							// proves ConfigMap updates reach running pods and
							// liveness restarts.
							LivenessProbe: &corev1.Probe{
								ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "test ! -e /etc/lc-test/die"}}},
								PeriodSeconds: 1, FailureThreshold: 2,
							},
							ReadinessProbe: &corev1.Probe{
								ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c",
									"dig +short +time=1 +tries=1 @$SVC_IP host.example.test TXT | grep -q ."}}},
								PeriodSeconds: 1, TimeoutSeconds: 3,
							},
						},
					},
					Volumes: []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "lc-named"}}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Both pods Ready, distinct addresses from the pod range.
	t1 := time.Now()
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"lc-named-0", "lc-named-1"} {
		p, err := c.WaitPodReady(ctx, ns, name, 60*time.Second)
		if err != nil {
			dumpLogs(t, c, ns, name)
			t.Fatal(err)
		}
		pods[name] = p
	}
	t.Logf("2 pods Ready in %s", time.Since(t1).Round(time.Millisecond))
	ip0, ip1 := pods["lc-named-0"].Status.PodIP, pods["lc-named-1"].Status.PodIP
	for _, ip := range []string{ip0, ip1} {
		if a, err := netip.ParseAddr(ip); err != nil || !podCIDR.Contains(a) {
			t.Fatalf("pod IP %q not in %s", ip, PodCIDR)
		}
	}
	if ip0 == ip1 {
		t.Fatalf("both pods have IP %s", ip0)
	}
	for name, p := range pods {
		st := p.Status
		if st.Phase != corev1.PodRunning || st.HostIP != gatewayIP.String() || len(st.ContainerStatuses) != 2 || st.StartTime == nil {
			t.Fatalf("%s status incomplete: %+v", name, st)
		}
		for _, s := range st.ContainerStatuses {
			if !s.Ready || s.State.Running == nil || s.ContainerID == "" {
				t.Fatalf("%s container %s: %+v", name, s.Name, s)
			}
		}
	}

	// Each pod answers on its own address with its own identity (HOSTNAME
	// env and UTS hostname), from its own claim.
	for name, p := range pods {
		if got := txt(t, p.Status.PodIP, "host.example.test", false); got != name {
			t.Fatalf("pod %s at %s says HOSTNAME %q", name, p.Status.PodIP, got)
		}
		if got := txt(t, p.Status.PodIP, "uts.example.test", true); got != name {
			t.Fatalf("pod %s says hostname %q", name, got)
		}
		if got := txt(t, p.Status.PodIP, "boots.example.test", false); got != "1" {
			t.Fatalf("pod %s boots %q, want 1", name, got)
		}
	}

	// The ClusterIP answers over UDP and TCP and spreads over both pods.
	seen := map[string]bool{}
	for i := 0; i < 12; i++ {
		seen[txt(t, svcIP, "host.example.test", i%2 == 1)] = true
	}
	if !seen["lc-named-0"] || !seen["lc-named-1"] || len(seen) != 2 {
		t.Fatalf("Service %s answered from %v, want both pods", svcIP, seen)
	}
	logs, err := c.Logs(ns, "lc-named-0", "named")
	if err != nil || !strings.Contains(logs, "running") {
		t.Fatalf("named log of lc-named-0 lacks 'running' (err %v):\n%s", err, logs)
	}

	// A ConfigMap update reaches the running pods (kubelet-style resync):
	// the client's liveness probe sees the new key and the container is
	// restarted; without the key it becomes Ready again.
	t5 := time.Now()
	setDie := func(on bool) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "lc-named", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if on {
			cm.Data["die"] = "1"
		} else {
			delete(cm.Data, "die")
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setDie(true)
	waitFor(t, "liveness restart after the ConfigMap update", 30*time.Second, func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "lc-named-1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, st := range p.Status.ContainerStatuses {
			if st.Name == "client" && st.RestartCount >= 1 && st.LastTerminationState.Terminated != nil {
				return true, ""
			}
		}
		return false, describeContainers(p)
	})
	setDie(false)
	if _, err := c.WaitPodReady(ctx, ns, "lc-named-1", 40*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("ConfigMap update -> liveness restart -> Ready again in %s", time.Since(t5).Round(time.Millisecond))
	if _, err := c.WaitPodReady(ctx, ns, "lc-named-0", 40*time.Second); err != nil {
		t.Fatal(err)
	}
	pods["lc-named-0"], _ = cs.CoreV1().Pods(ns).Get(ctx, "lc-named-0", metav1.GetOptions{})

	// Delete pod 0: it comes back with a new UID and a NEW address, keeps
	// its claim (boots 2) and ran its preStop hook (prestops 1).
	oldPIDs := c.ContainerPIDs(ns, "lc-named-0")
	if len(oldPIDs) != 2 {
		t.Fatalf("pids of lc-named-0: %v", oldPIDs)
	}
	oldUID := pods["lc-named-0"].UID
	t2 := time.Now()
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "lc-named-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var p0 *corev1.Pod
	waitFor(t, "lc-named-0 recreated and Ready", 60*time.Second, func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "lc-named-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.UID == oldUID {
			return false, "old pod still there"
		}
		p0 = p
		return podReady(p), fmt.Sprintf("phase %s %s", p.Status.Phase, describeContainers(p))
	})
	t.Logf("pod 0 replaced in %s: %s -> %s", time.Since(t2).Round(time.Millisecond), ip0, p0.Status.PodIP)
	if p0.Status.PodIP == ip0 || p0.Status.PodIP == ip1 || p0.Status.PodIP == "" {
		t.Fatalf("recreated pod got IP %q (old %s, other %s)", p0.Status.PodIP, ip0, ip1)
	}
	for name, pid := range oldPIDs {
		if processAlive(pid) {
			t.Fatalf("container %s of the deleted pod (pid %d) still runs", name, pid)
		}
	}
	if got := txt(t, p0.Status.PodIP, "boots.example.test", false); got != "2" {
		t.Fatalf("boots after restart %q, want 2 (claim must survive the pod)", got)
	}
	if got := txt(t, p0.Status.PodIP, "prestops.example.test", false); got != "1" {
		t.Fatalf("prestops after restart %q, want 1 (preStop hook)", got)
	}
	if _, err := Dig(ip0, "host.example.test", dns.TypeTXT); err == nil {
		t.Fatalf("the old pod address %s still answers", ip0)
	}

	// Delete the StatefulSet: the garbage collector removes the pods (the
	// node agent kills their processes) and the claims.
	var pids []int
	for _, name := range []string{"lc-named-0", "lc-named-1"} {
		for _, pid := range c.ContainerPIDs(ns, name) {
			pids = append(pids, pid)
		}
	}
	t3 := time.Now()
	bg := metav1.DeletePropagationBackground
	if err := cs.AppsV1().StatefulSets(ns).Delete(ctx, "lc-named", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pods garbage-collected", 60*time.Second, func() (bool, string) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=lc-named"})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("%d pods left", len(l.Items))
	})
	waitFor(t, "claims and volumes deleted", 60*time.Second, func() (bool, string) {
		l, err := cs.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		pvs, err := cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0 && len(pvs.Items) == 0, fmt.Sprintf("%d claims, %d volumes left", len(l.Items), len(pvs.Items))
	})
	t.Logf("StatefulSet, pods and claims gone in %s", time.Since(t3).Round(time.Millisecond))
	waitFor(t, "processes gone", 10*time.Second, func() (bool, string) {
		for _, pid := range pids {
			if processAlive(pid) {
				return false, fmt.Sprintf("pid %d alive", pid)
			}
		}
		return true, ""
	})
	if left := listNetns(namePrefix + "-pod"); len(left) != 0 {
		t.Fatalf("pod network namespaces left after the pods went: %v", left)
	}

	// Stop leaves nothing behind.
	created := c.CreatedPaths()
	if len(created) == 0 {
		t.Fatalf("expected mount points created on the host (/etc/lc-test, /var/lib/lc-test)")
	}
	work := c.WorkDir()
	t4 := time.Now()
	c.Stop()
	t.Logf("stopped in %s", time.Since(t4).Round(time.Millisecond))
	if left := Leftovers(); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	for _, p := range append(created, work) {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s still exists after Stop", p)
		}
	}
	if c.kcm != nil && processAlive(c.kcm.Process.Pid) {
		t.Fatalf("kube-controller-manager still runs")
	}
	t.Logf("whole scenario %s", time.Since(t0).Round(time.Millisecond))
}

func dumpLogs(t *testing.T, c *Cluster, ns, pod string) {
	for _, ctr := range []string{"named", "client"} {
		if l, err := c.Logs(ns, pod, ctr); err == nil {
			t.Logf("--- %s/%s %s:\n%s", ns, pod, ctr, l)
		}
	}
}

func ptrInt32(v int32) *int32 { return &v }

// A pod whose image is not in the table stays Pending with a clear reason;
// a mapped binary under /tmp still runs although every container gets a
// private /tmp.
func TestImageTable(t *testing.T) {
	requireEnv(t)
	ctx := context.Background()
	tool := filepath.Join(t.TempDir(), "tool")
	b, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tool, b, 0o755); err != nil {
		t.Fatal(err)
	}
	images := DefaultImages("", "")
	images["localcluster.test/tool"] = Image{Entrypoint: []string{tool}, Cmd: []string{"300"}}
	c, err := Start(ctx, Options{Logf: t.Logf, Images: images})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	cs := c.Client()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "unmapped", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "quay.io/example/nothing:1"}},
			TerminationGracePeriodSeconds: ptrInt64(1)},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tp := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "tool", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "t", Image: "localcluster.test/tool:v1"}},
			TerminationGracePeriodSeconds: ptrInt64(1)},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, tp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitPodReady(ctx, "default", "tool", 20*time.Second); err != nil {
		l, _ := c.Logs("default", "tool", "t")
		t.Fatalf("%v\n%s", err, l)
	}
	// Init containers run first and share volumes; a container that ignores
	// SIGTERM is killed at the end of the grace period.
	ip := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stubborn", Namespace: "default"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptrInt64(1),
			InitContainers: []corev1.Container{{Name: "init", Image: BindImage, Command: []string{"/bin/sh", "-c", "echo $POD_IP > /work/ip"},
				VolumeMounts: []corev1.VolumeMount{{Name: "w", MountPath: "/work"}}}},
			Containers: []corev1.Container{{Name: "main", Image: BindImage,
				Command:      []string{"/bin/sh", "-c", "trap '' TERM; while :; do sleep 1; done"},
				VolumeMounts: []corev1.VolumeMount{{Name: "w", MountPath: "/work"}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
					Command: []string{"/bin/sh", "-c", "test \"$(cat /work/ip)\" = \"$POD_IP\""}}}}}},
			Volumes: []corev1.Volume{{Name: "w", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, ip, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.WaitPodReady(ctx, "default", "stubborn", 20*time.Second)
	if err != nil {
		l, _ := c.Logs("default", "stubborn", "init")
		t.Fatalf("%v\n%s", err, l)
	}
	if len(got.Status.InitContainerStatuses) != 1 || got.Status.InitContainerStatuses[0].State.Terminated == nil ||
		got.Status.InitContainerStatuses[0].State.Terminated.ExitCode != 0 {
		t.Fatalf("init container status: %+v", got.Status.InitContainerStatuses)
	}
	stubborn := c.ContainerPIDs("default", "stubborn")["main"]
	t0 := time.Now()
	if err := cs.CoreV1().Pods("default").Delete(ctx, "stubborn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "stubborn pod finalised", 20*time.Second, func() (bool, string) {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "stubborn", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if d := time.Since(t0); d < time.Second || processAlive(stubborn) {
		t.Fatalf("a SIGTERM-ignoring container must live out its 1 s grace and then die: %s, alive %v", d, processAlive(stubborn))
	}

	waitFor(t, "ImageNotMapped status", 30*time.Second, func() (bool, string) {
		got, err := cs.CoreV1().Pods("default").Get(ctx, "unmapped", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, s := range got.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && w.Reason == "ImageNotMapped" && strings.Contains(w.Message, "quay.io/example/nothing:1") {
				return got.Status.Phase == corev1.PodPending, ""
			}
		}
		return false, describeContainers(got)
	})
	evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=unmapped"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || (e.Reason == "ImageNotMapped" && e.Type == corev1.EventTypeWarning)
	}
	if !found {
		t.Fatalf("no ImageNotMapped warning event: %+v", evs.Items)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, "unmapped", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod finalised", 20*time.Second, func() (bool, string) {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "unmapped", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
