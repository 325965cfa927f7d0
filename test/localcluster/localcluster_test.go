package localcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// bindImage is the BIND image the operator's clusters run by default:
// the checkout's release's, which make images pushed to the registry the
// node pulls from (a test binary carries no release version of its own).
var bindImage = testkit.BindImage(testkit.Version())

// namedConf makes named answer `hostname.bind CH TXT` (with the pod's
// name) on an unprivileged port, as the image's non-root user.
const namedConf = `options {
	directory "/data";
	pid-file none;
	listen-on port 5353 { any; };
	listen-on-v6 { none; };
	recursion no;
	dnssec-validation no;
};
`

// TestRealNode runs pods the way the operator's pods run: a StatefulSet of
// the BIND image as a non-root user with a read-only root filesystem,
// config from a ConfigMap, data on a claim of the default StorageClass, a
// ClusterIP Service through kube-proxy; then kubectl exec/logs through the
// kubelet, a pod restart that keeps the claim, and a Stop that leaves the
// host as it was.
func TestRealNode(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Snapshots compare only while no other cluster runs.
	lock, err := localcluster.LockHost(ctx, 10*time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	defer lock.Unlock()
	g.Expect(lock.SweepLeftovers(ctx, t.Logf)).To(Succeed())
	before := localcluster.TakeHostSnapshot(ctx)

	c, err := localcluster.Start(ctx, localcluster.Options{Logf: t.Logf, HostLock: lock})
	g.Expect(err).NotTo(HaveOccurred())
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	cs := c.Client()
	const ns = "default"

	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "named"},
		Data:       map[string]string{"named.conf": namedConf},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{"app": "dns"}
	_, err = cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{
			{Name: "udp", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)},
			{Name: "tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(5353)},
		}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(labels), metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	for _, pod := range []string{"dns-0", "dns-1"} {
		_, err := c.WaitPodReady(ctx, ns, pod, 3*time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
	}
	svcIP, err := c.ServiceIP(ctx, ns, "dns")
	g.Expect(err).NotTo(HaveOccurred())

	// kube-proxy spreads the ClusterIP over both pods, over UDP and TCP.
	seen := map[string]bool{}
	g.Eventually(func() map[string]bool {
		for _, tcp := range []bool{false, true} {
			if name, err := hostname(svcIP, tcp); err == nil {
				seen[name] = true
			}
		}
		return seen
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(SatisfyAll(HaveKey("dns-0"), HaveKey("dns-1")))

	// A pod reaches the ClusterIP too (pod → kube-proxy → pod, hairpin
	// included), and exec goes through the API server to the kubelet.
	out, err := c.Kubectl(ctx, "exec", "-n", ns, "dns-0", "--", "dig", "+short", "+tries=3", "-p", "53", "@"+svcIP, "-c", "CH", "-t", "TXT", "hostname.bind")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Or(ContainSubstring(`"dns-0"`), ContainSubstring(`"dns-1"`)))

	// The pod runs as the image's user with the group the claim got.
	out, err = c.Kubectl(ctx, "exec", "-n", ns, "dns-0", "-c", "named", "--", "sh", "-c",
		"id -u; stat -c %g /data; if touch /etc/x 2>/dev/null; then echo writable; else echo read-only; fi; echo boot >> /data/boots; wc -l < /data/boots")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Fields(out)).To(Equal([]string{"65532", "65532", "read-only", "1"}))

	logs, err := c.Logs(ctx, ns, "dns-0", "named", false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(logs).To(ContainSubstring("running"))

	// Deleting a pod: its processes go, the StatefulSet brings it back
	// with the same claim.
	old, err := cs.CoreV1().Pods(ns).Get(ctx, "dns-0", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	oldPIDs := localcluster.PodUIDPIDs(string(old.UID))
	g.Expect(oldPIDs).NotTo(BeEmpty())
	// The CPUs are shared as on a node whose Kubernetes runs as system
	// services: the components in system.slice, the pods in kubepods,
	// siblings under the node's cgroup root.
	g.Expect(cpuCgroupComms("/bind-localcluster/system.slice")).To(ContainElements("etcd", "kube-apiserver", "containerd", "containerd-shim", "kubelet", "kube-proxy"))
	// The node weighs against the tests beside it as system.slice and
	// kubepods (1024 per CPU) together.
	shares, err := os.ReadFile("/sys/fs/cgroup/cpu/bind-localcluster/cpu.shares")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(string(shares))).To(Equal(strconv.Itoa(1024 * (1 + runtime.NumCPU()))))
	for _, pid := range oldPIDs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(b)).To(MatchRegexp(`(?m)^\d+:[^:]*\bcpu\b[^:]*:/bind-localcluster/kubepods/`), "pid %d", pid)
	}
	g.Expect(cs.CoreV1().Pods(ns).Delete(ctx, "dns-0", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() string {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "dns-0", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return string(p.UID)
	}).WithTimeout(time.Minute).ShouldNot(Or(BeEmpty(), Equal(string(old.UID))))
	_, err = c.WaitPodReady(ctx, ns, "dns-0", 2*time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(localcluster.PodUIDPIDs(string(old.UID))).To(BeEmpty())
	out, err = c.Kubectl(ctx, "exec", "-n", ns, "dns-0", "-c", "named", "--", "sh", "-c", "echo boot >> /data/boots; wc -l < /data/boots")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(out)).To(Equal("2"))

	c.Stop()
	stopped = true
	g.Expect(before.Added(localcluster.TakeHostSnapshot(ctx))).To(BeEmpty(), "the host after Stop differs from before Start")
}

// cpuCgroupComms are the names of the processes in a cgroup of the v1 cpu
// hierarchy.
func cpuCgroupComms(cgroup string) []string {
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpu", cgroup, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var comms []string
	for _, pid := range strings.Fields(string(b)) {
		if comm, err := os.ReadFile(filepath.Join("/proc", pid, "comm")); err == nil {
			comms = append(comms, strings.TrimSpace(string(comm)))
		}
	}
	return comms
}

func statefulSet(labels map[string]string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](2),
			ServiceName:         "dns",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](65532),
						RunAsGroup:     ptr.To[int64](65532),
						FSGroup:        ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            "named",
						Image:           bindImage,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            []string{"-c", "/config/named.conf"},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(5353)}},
							PeriodSeconds: 1,
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: "/config"},
							{Name: "data", MountPath: "/data"},
							{Name: "run", MountPath: "/run/named"},
							{Name: "cache", MountPath: "/var/cache/bind"},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "named"}}}},
						{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
				},
			}},
		},
	}
}

// hostname asks the server which pod answers.
func hostname(server string, tcp bool) (string, error) {
	network := "udp"
	if tcp {
		network = "tcp"
	}
	m := new(dns.Msg)
	m.SetQuestion("hostname.bind.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	r, err := localcluster.Exchange(network, server, m)
	if err != nil {
		return "", err
	}
	for _, rr := range r.Answer {
		if txt, ok := rr.(*dns.TXT); ok && len(txt.Txt) > 0 {
			return txt.Txt[0], nil
		}
	}
	return "", fmt.Errorf("no TXT in %v", r)
}
