package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fixedPaths are the host paths containerd, the CNI plugins and the
// kubelet use whatever they are configured with. Those that did not exist
// before are journaled and removed on Stop.
var fixedPaths = []string{
	"/run/containerd",
	"/run/netns",
	"/var/lib/cni",
	"/var/lib/kubelet",
	"/var/log/containers",
	"/var/log/pods",
	"/etc/cni",
	"/opt/cni",
}

func (c *Cluster) containerdSocket() string { return c.opts.path("containerd", "containerd.sock") }

// startNode runs the registry, then containerd with its own root, state
// and socket, imports the test images (the pause image), then starts the kubelet and kube-proxy and waits for the
// node to be Ready.
func (c *Cluster) startNode(ctx context.Context) error {
	var created []string
	for _, p := range fixedPaths {
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			created = append(created, p)
		}
	}
	if err := c.state.update(func(s *state) { s.Paths = created }); err != nil {
		return err
	}
	if err := c.makeCgroupRoot(); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  # No CAP_SYS_RESOURCE here: without this runc fails with "can't get
  # final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[8]q
`, c.opts.path("containerd", "root"), c.opts.path("containerd", "state"), c.containerdSocket(),
		c.containerdSocket()+".ttrpc", c.opts.path("containerd", "opt"), c.opts.PauseImage,
		c.opts.path("cni", "net.d"), c.opts.path("containerd", "certs.d"))
	if err := os.MkdirAll(c.opts.path("containerd"), 0o711); err != nil {
		return err
	}
	if err := c.writeRegistryBlackhole(); err != nil {
		return err
	}
	if err := c.writeRegistryHosts(); err != nil {
		return err
	}
	if err := c.startRegistry(ctx); err != nil {
		return err
	}
	if err := os.WriteFile(c.opts.path("containerd", "config.toml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	containerd, err := c.startDaemon("containerd", "containerd", "--config", c.opts.path("containerd", "config.toml"))
	if err != nil {
		return err
	}
	if err := c.waitUntil(ctx, "containerd", 30*time.Second, func() (bool, error) {
		_, err := c.ctr(ctx, "version")
		return err == nil, err
	}, containerd); err != nil {
		return err
	}
	for _, img := range c.opts.Images {
		if err := c.ImportImage(ctx, img); err != nil {
			return err
		}
	}
	if err := c.startKubelet(ctx, containerd); err != nil {
		return err
	}
	return c.startKubeProxy()
}

// ImportImage imports a docker-archive into the node's containerd, as
// Start does with Options.Images: for an image a test needs only itself.
func (c *Cluster) ImportImage(ctx context.Context, archive string) error {
	c.opts.Logf("localcluster: importing %s", archive)
	if _, err := c.ctr(ctx, "images", "import", "--snapshotter", "overlayfs", archive); err != nil {
		return errorf("import %s: %v", archive, err)
	}
	return nil
}

// writeRegistryBlackhole points every registry at a closed loopback port:
// an image that was not imported fails at once (ErrImagePull) instead of
// reaching for the internet.
func (c *Cluster) writeRegistryBlackhole() error {
	dir := c.opts.path("containerd", "certs.d", "_default")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(`server = "http://127.0.0.1:9"

[host."http://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
`), 0o644)
}

func (c *Cluster) ctr(ctx context.Context, args ...string) (string, error) {
	return run(ctx, "ctr", append([]string{"--address", c.containerdSocket(), "--namespace", "k8s.io"}, args...)...)
}

// makeCgroupRoot creates the kubelet's cgroup root in every v1 hierarchy
// (cpuset needs its CPUs and memory nodes before anything can join).
func (c *Cluster) makeCgroupRoot() error {
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		dir := filepath.Join(h, cgroupRoot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return errorf("cgroup %s: %v", dir, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return errorf("cgroup %s/%s: %v", dir, f, err)
				}
			}
		}
	}
	return nil
}

// cgroupHierarchies lists the mounted cgroup hierarchies (v1 controllers
// and the unified v2 tree).
func cgroupHierarchies() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		left, right, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 1 || (rf[0] != "cgroup" && rf[0] != "cgroup2") {
			continue
		}
		out = append(out, lf[4])
	}
	return out, nil
}

func (c *Cluster) startKubelet(ctx context.Context, containerd *daemon) error {
	ports, err := freeLoopbackPorts(1)
	if err != nil {
		return err
	}
	// Pods get no resolver: the cluster has no DNS and nothing may leave
	// the test network.
	if err := os.WriteFile(c.opts.path("resolv.conf"), []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[2]d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[3]q}
authorization: {mode: Webhook}
# cgroups v1 here, no systemd in charge of them.
cgroupDriver: cgroupfs
cgroupRoot: %[4]q
failCgroupV1: false
failSwapOn: false
clusterDomain: cluster.local
resolvConf: %[5]q
podLogsDir: %[6]q
maxPods: 250
podPidsLimit: -1
serializeImagePulls: false
# A shared build machine: never evict or garbage-collect the imported
# images because the disk looks full.
evictionHard: {memory.available: "50Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
syncFrequency: 10s
nodeStatusUpdateFrequency: 5s
shutdownGracePeriod: 0s
`, NodeIP, ports[0], c.opts.path("pki", "ca.crt"), cgroupRoot, c.opts.path("resolv.conf"), c.opts.path("pod-logs"))
	if err := os.WriteFile(c.opts.path("kubelet.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	kubelet, err := c.startDaemon("kubelet", c.opts.bin("kubelet"),
		"--config="+c.opts.path("kubelet.yaml"),
		"--kubeconfig="+c.opts.path(kubeletID.file),
		"--container-runtime-endpoint=unix://"+c.containerdSocket(),
		"--root-dir="+c.opts.path("kubelet"),
		"--cert-dir="+c.opts.path("kubelet", "pki"),
		"--hostname-override="+NodeName,
		"--node-ip="+NodeIP.String(),
		"--v=1")
	if err != nil {
		return err
	}
	c.kubelet = kubelet
	return c.waitUntil(ctx, "node "+NodeName+" to be Ready", 90*time.Second, func() (bool, error) {
		n, err := c.client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, fmt.Errorf("%s: %s", cond.Reason, cond.Message)
			}
		}
		return false, errNotYet
	}, kubelet, containerd)
}

// startKubeProxy runs kube-proxy in nftables mode, leaving the host's
// conntrack settings alone.
func (c *Cluster) startKubeProxy() error {
	ports, err := freeLoopbackPorts(2)
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: %[1]q
hostnameOverride: %[2]s
bindAddress: %[3]s
clusterCIDR: %[4]s
healthzBindAddress: 127.0.0.1:%[5]d
metricsBindAddress: 127.0.0.1:%[6]d
nodePortAddresses: [%[3]s/32]
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
`, c.opts.path(proxyID.file), NodeName, NodeIP, PodCIDR, ports[0], ports[1])
	if err := os.WriteFile(c.opts.path("kube-proxy.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := c.startDaemon("kube-proxy", c.opts.bin("kube-proxy"), "--config="+c.opts.path("kube-proxy.yaml"), "--v=1")
	if err != nil {
		return err
	}
	c.proxy = p
	return nil
}
