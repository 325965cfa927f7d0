package localcluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startControlPlane runs etcd on loopback and the API server on the
// node's address, then the controller manager and the scheduler.
func (c *Cluster) startControlPlane(ctx context.Context) error {
	ports, err := freeLoopbackPorts(2)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer := ports[0], ports[1]
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	etcd, err := c.startDaemon("etcd", c.opts.bin("etcd"),
		"--data-dir="+c.opts.path("etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls=http://127.0.0.1:"+strconv.Itoa(etcdPeer),
		"--initial-advertise-peer-urls=http://127.0.0.1:"+strconv.Itoa(etcdPeer),
		"--initial-cluster=default=http://127.0.0.1:"+strconv.Itoa(etcdPeer),
		"--unsafe-no-fsync", "--quota-backend-bytes=8589934592", "--log-level=warn")
	if err != nil {
		return err
	}
	c.etcdURL = etcdURL
	if err := c.startAPIServer(ctx, etcd); err != nil {
		return err
	}

	kcm, err := c.startDaemon("kube-controller-manager", c.opts.bin("kube-controller-manager"),
		"--kubeconfig="+c.opts.path(kcmID.file),
		"--authentication-kubeconfig="+c.opts.path(kcmID.file),
		"--authorization-kubeconfig="+c.opts.path(kcmID.file),
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--leader-elect=false",
		"--controllers=*",
		"--allocate-node-cidrs=true", "--cluster-cidr="+PodCIDR.String(),
		"--node-cidr-mask-size="+strconv.Itoa(PodCIDR.Bits()),
		"--service-cluster-ip-range="+ServiceCIDR.String(),
		"--root-ca-file="+c.pkiFile("ca.crt"),
		"--service-account-private-key-file="+c.pkiFile("sa.key"),
		"--cluster-signing-cert-file="+c.pkiFile("ca.crt"), "--cluster-signing-key-file="+c.pkiFile("ca.key"),
		"--concurrent-statefulset-syncs=5",
		"--v=1")
	if err != nil {
		return err
	}
	scheduler, err := c.startDaemon("kube-scheduler", c.opts.bin("kube-scheduler"),
		"--kubeconfig="+c.opts.path(schedulerID.file),
		"--authentication-kubeconfig="+c.opts.path(schedulerID.file),
		"--authorization-kubeconfig="+c.opts.path(schedulerID.file),
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--leader-elect=false", "--v=1")
	if err != nil {
		return err
	}
	c.kcm, c.scheduler = kcm, scheduler
	// The service-account controllers give every namespace its default
	// ServiceAccount; pods are refused until it exists.
	return c.waitUntil(ctx, "the default ServiceAccount", 60*time.Second, func() (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	}, kcm, scheduler, c.apiserver)
}

// pkiFile is a file writePKI wrote.
func (c *Cluster) pkiFile(name string) string { return c.opts.path("pki", name) }

// startAPIServer runs the API server against the etcd at c.etcdURL and
// waits until it is ready (or one of the watched daemons dies).
func (c *Cluster) startAPIServer(ctx context.Context, watch ...*daemon) error {
	apiserver, err := c.startDaemon("kube-apiserver", c.opts.bin("kube-apiserver"),
		"--etcd-servers="+c.etcdURL,
		"--bind-address="+NodeIP.String(), "--secure-port=6443", "--advertise-address="+NodeIP.String(),
		"--service-cluster-ip-range="+ServiceCIDR.String(),
		"--tls-cert-file="+c.pkiFile("apiserver.crt"), "--tls-private-key-file="+c.pkiFile("apiserver.key"),
		"--client-ca-file="+c.pkiFile("ca.crt"),
		"--kubelet-client-certificate="+c.pkiFile("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+c.pkiFile("apiserver-kubelet-client.key"),
		// The kubelet serves a self-signed certificate; the node name does
		// not resolve outside, so the API server dials the InternalIP.
		"--kubelet-preferred-address-types=InternalIP",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+c.pkiFile("sa.pub"),
		"--service-account-signing-key-file="+c.pkiFile("sa.key"),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=false",
		"--profiling="+strconv.FormatBool(c.opts.APIServerProfiling),
		"--v=1")
	if err != nil {
		return err
	}
	c.apiserver = apiserver
	if c.adminConfig == nil {
		if c.adminConfig, err = c.restConfig(adminID); err != nil {
			return err
		}
		if err := c.connect(); err != nil {
			return err
		}
	}
	if err := c.waitUntil(ctx, "the API server to become ready", 90*time.Second, c.apiServerReady(ctx), append(watch, apiserver)...); err != nil {
		return err
	}
	c.opts.Logf("localcluster: API server ready at %s", c.serverURL())
	return nil
}

func (c *Cluster) apiServerReady(ctx context.Context) func() (bool, error) {
	return func() (bool, error) {
		body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", err
	}
}

// RestartAPIServer stops the API server as a kubelet stops a static pod
// (SIGTERM, SIGKILL after its default 30 s grace period: kube-apiserver
// stops listening at once but drains watches for up to a minute), starts
// it again with the same flags and waits until it is ready. Everything else keeps running, as on a
// node whose API server is restarted: clients see refused connections
// and broken watches until it is back.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	old := c.apiserver
	old.stop(30 * time.Second)
	c.opts.Logf("localcluster: API server stopped (%v)", old.err)
	return c.startAPIServer(ctx)
}

// freeLoopbackPorts returns n distinct free TCP ports on 127.0.0.1.
func freeLoopbackPorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
