package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// defaultLockWait is how long Start waits for another local cluster on the
// machine to stop.
const defaultLockWait = 5 * time.Minute

// Options configure a local cluster. The zero value works from a checkout
// where `hack/build-k8s-binaries.sh bin/k8s` has run.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager
	// (default: $KUBEBUILDER_ASSETS, else <repo>/bin/k8s).
	BinDir string
	// WorkDir holds kubeconfig, logs, volumes and claims (default: a new
	// temporary folder). It is removed on Stop unless KeepWorkDir.
	WorkDir     string
	KeepWorkDir bool
	// OperatorBinary is what the operator image runs (see DefaultImages);
	// empty leaves that image unmapped.
	OperatorBinary string
	// NamedPath is the named binary the BIND image maps to (default
	// /usr/sbin/named); RequireNamed makes Start fail when it is missing.
	NamedPath    string
	RequireNamed bool
	// Images replaces the image table (default: DefaultImages).
	Images map[string]Image
	// NodeName is the single node's name (default "localcluster").
	NodeName string
	// MaxGracePeriod caps a pod's termination grace period (default 5s), so
	// tests do not wait 30 s for a pod that ignores SIGTERM.
	MaxGracePeriod time.Duration
	// CRDDirectoryPaths are installed into the API server before Start returns.
	CRDDirectoryPaths []string
	// ConfigureEnvironment may adjust the envtest environment (API server
	// flags, webhook install options) before it starts.
	ConfigureEnvironment func(*envtest.Environment)
	// LockWait bounds the wait for another local cluster on this machine to
	// stop (default 5m).
	LockWait time.Duration
	// Logf receives progress lines (default: discarded).
	Logf func(format string, args ...any)
}

// Cluster is a running local cluster.
type Cluster struct {
	opts           Options
	env            *envtest.Environment
	cfg            *rest.Config
	client         kubernetes.Interface
	kubeconfigPath string
	workDir        string
	lock           *os.File
	spawn          *spawner
	ipam           *ipam
	kcm            *exec.Cmd
	kcmDone        chan struct{}
	node           *node
	proxy          *proxy
	cancel         context.CancelFunc
	wg             sync.WaitGroup

	mu           sync.Mutex
	createdPaths []string // mount points created on the host, removed on Stop
	stopped      bool
}

// Start brings up etcd, kube-apiserver, kube-controller-manager, the node
// agent and the Service proxy. On error everything created so far is
// removed again.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := checkPrerequisites(&opts); err != nil {
		return nil, err
	}
	lock, err := acquireLock(ctx, opts.LockWait)
	if err != nil {
		return nil, err
	}
	c = &Cluster{opts: opts, lock: lock, spawn: newSpawner(), ipam: newIPAM()}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	if did := sweep(ctx); len(did) > 0 {
		c.logf("removed leftovers of an earlier run: %s", strings.Join(did, ", "))
	}
	c.workDir = opts.WorkDir
	if c.workDir == "" {
		if c.workDir, err = os.MkdirTemp("", workDirPrefix); err != nil {
			return c, err
		}
		logCreated(c.workDir)
	}
	for _, d := range []string{"logs", "pods", "claims"} {
		if err := os.MkdirAll(filepath.Join(c.workDir, d), 0o755); err != nil {
			return c, err
		}
	}
	if err := setupHostNetwork(ctx); err != nil {
		return c, fmt.Errorf("host network: %w", err)
	}
	if err := c.startControlPlane(ctx); err != nil {
		return c, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.proxy = newProxy(c)
	c.node = newNode(c)
	if err := c.node.start(runCtx, &c.wg); err != nil {
		return c, err
	}
	c.proxy.start(runCtx, &c.wg, c.node.factory)
	if err := c.waitControllerManager(ctx); err != nil {
		return c, err
	}
	c.logf("local cluster up: kubeconfig %s", c.kubeconfigPath)
	return c, nil
}

func (o *Options) defaults() error {
	if o.BinDir == "" {
		o.BinDir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(RepoRoot(), "bin", "k8s")
	}
	if o.NamedPath == "" {
		o.NamedPath = "/usr/sbin/named"
	}
	if o.NodeName == "" {
		o.NodeName = "localcluster"
	}
	if o.MaxGracePeriod == 0 {
		o.MaxGracePeriod = 5 * time.Second
	}
	if o.LockWait == 0 {
		o.LockWait = defaultLockWait
	}
	if o.Images == nil {
		o.Images = DefaultImages(o.OperatorBinary, o.NamedPath)
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return nil
}

func (c *Cluster) logf(format string, args ...any) { c.opts.Logf(format, args...) }

// RepoRoot is the repository's top folder, found from this source file.
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func (c *Cluster) startControlPlane(ctx context.Context) error {
	env := &envtest.Environment{
		BinaryAssetsDirectory: c.opts.BinDir,
		CRDDirectoryPaths:     c.opts.CRDDirectoryPaths,
		ErrorIfCRDPathMissing: len(c.opts.CRDDirectoryPaths) > 0,
	}
	// envtest's API server already runs without the ServiceAccount
	// admission plugin, so pods get no token volume and need no token
	// controller.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", ServiceCIDR)
	if c.opts.ConfigureEnvironment != nil {
		c.opts.ConfigureEnvironment(env)
	}
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("start etcd and kube-apiserver from %s: %w", c.opts.BinDir, err)
	}
	c.env = env
	logControlPlane()
	admin, err := env.AddUser(envtest.User{Name: "localcluster-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("admin user: %w", err)
	}
	c.cfg = admin.Config()
	c.cfg.QPS, c.cfg.Burst = 200, 400
	kc, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	c.kubeconfigPath = filepath.Join(c.workDir, "kubeconfig")
	if err := os.WriteFile(c.kubeconfigPath, kc, 0o600); err != nil {
		return err
	}
	_ = cfg
	if c.client, err = kubernetes.NewForConfig(c.cfg); err != nil {
		return err
	}
	kcmUser, err := env.AddUser(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kcmKC, err := kcmUser.KubeConfig()
	if err != nil {
		return err
	}
	kcmPath := filepath.Join(c.workDir, "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(kcmPath, kcmKC, 0o600); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(c.workDir, "logs", "kube-controller-manager.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(c.opts.BinDir, "kube-controller-manager"),
		"--kubeconfig="+kcmPath,
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		"--controllers="+strings.Join(kcmControllers, ","),
		"--service-cluster-ip-range="+ServiceCIDR,
		"--kube-api-qps=100", "--kube-api-burst=200",
		"--concurrent-statefulset-syncs=5",
		"--v=1",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := c.spawn.start(cmd); err != nil {
		return fmt.Errorf("start kube-controller-manager: %w", err)
	}
	c.kcm = cmd
	c.kcmDone = make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.kcmDone) }()
	return nil
}

// kcmControllers are the controllers the local cluster runs. There is no
// scheduler (the node agent binds pods), no PV binder (the node agent binds
// claims to host folders), no node lifecycle controller (one node, always
// Ready) and no service-account token controller (no token volumes).
var kcmControllers = []string{
	"statefulset-controller",
	"garbage-collector-controller",
	"endpointslice-controller",
	"endpoints-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	"replicaset-controller",
	"deployment-controller",
	"disruption-controller",
}

// waitControllerManager waits until kube-controller-manager acts: its
// serviceaccount controller creates the default ServiceAccount.
func (c *Cluster) waitControllerManager(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		_, err := c.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-c.kcmDone:
			return fmt.Errorf("kube-controller-manager exited; see %s", filepath.Join(c.workDir, "logs", "kube-controller-manager.log"))
		case <-ctx.Done():
			return fmt.Errorf("kube-controller-manager did not become active in time (last error %v); see %s", err, filepath.Join(c.workDir, "logs", "kube-controller-manager.log"))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop kills every pod process, removes every namespace, link, address,
// mount point and folder the cluster created, and stops the control plane.
// It is safe to call more than once and on a half-started cluster.
func (c *Cluster) Stop() {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	c.mu.Unlock()
	ctx := context.Background()
	if c.cancel != nil {
		c.cancel() // pod workers kill their processes and remove their netns
	}
	waitGroup(&c.wg, 2*c.opts.MaxGracePeriod+20*time.Second)
	if c.kcm != nil && c.kcm.Process != nil {
		_ = c.kcm.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.kcmDone:
		case <-time.After(5 * time.Second):
			_ = c.kcm.Process.Kill()
			<-c.kcmDone
		}
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			c.logf("stop control plane: %v", err)
		}
	}
	_ = sweepNet(ctx) // the bridge, and anything a pod worker could not remove
	c.mu.Lock()
	paths := append([]string(nil), c.createdPaths...)
	c.mu.Unlock()
	// Deepest first; os.Remove never removes a folder that is not empty.
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	for _, p := range paths {
		_ = os.Remove(p)
	}
	if c.workDir != "" && !c.opts.KeepWorkDir && c.opts.WorkDir == "" {
		_ = os.RemoveAll(c.workDir)
	}
	_ = os.Remove(createdLog)
	if c.lock != nil {
		_ = c.lock.Close()
	}
}

func waitGroup(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// Config is an admin REST config for the cluster.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.cfg) }

// Client is an admin clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// KubeconfigPath is an admin kubeconfig file (valid until Stop).
func (c *Cluster) KubeconfigPath() string { return c.kubeconfigPath }

// WorkDir holds logs/, pods/ and claims/.
func (c *Cluster) WorkDir() string { return c.workDir }

// NodeName is the name of the single node.
func (c *Cluster) NodeName() string { return c.opts.NodeName }

// LogPath is the log file of one container of a pod (appended across pod
// incarnations of the same name; each start writes a header line).
func (c *Cluster) LogPath(namespace, pod, container string) string {
	return filepath.Join(c.workDir, "logs", namespace, pod, container+".log")
}

// Logs returns a container's log.
func (c *Cluster) Logs(namespace, pod, container string) (string, error) {
	b, err := os.ReadFile(c.LogPath(namespace, pod, container))
	return string(b), err
}

// PodIP returns a pod's IP as the API reports it ("" while it has none).
func (c *Cluster) PodIP(ctx context.Context, namespace, name string) (string, error) {
	p, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return p.Status.PodIP, nil
}

// ServiceIP returns a Service's ClusterIP.
func (c *Cluster) ServiceIP(ctx context.Context, namespace, name string) (string, error) {
	s, err := c.client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return s.Spec.ClusterIP, nil
}

// WaitPodReady waits until the pod exists and is Ready, and returns it.
func (c *Cluster) WaitPodReady(ctx context.Context, namespace, name string, timeout time.Duration) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		p, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil && p.DeletionTimestamp == nil && podReady(p):
			return p, nil
		case err == nil:
			last = fmt.Sprintf("phase %s, %s", p.Status.Phase, describeContainers(p))
		case apierrors.IsNotFound(err):
			last = "not found"
		default:
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("pod %s/%s not Ready within %s: %s", namespace, name, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func describeContainers(p *corev1.Pod) string {
	var parts []string
	for _, s := range p.Status.ContainerStatuses {
		st := "running"
		switch {
		case s.State.Waiting != nil:
			st = "waiting " + s.State.Waiting.Reason + ": " + s.State.Waiting.Message
		case s.State.Terminated != nil:
			st = fmt.Sprintf("terminated %d", s.State.Terminated.ExitCode)
		}
		parts = append(parts, fmt.Sprintf("%s ready=%v restarts=%d %s", s.Name, s.Ready, s.RestartCount, st))
	}
	if len(parts) == 0 {
		return "no container statuses"
	}
	return strings.Join(parts, "; ")
}

// ContainerPIDs returns the host PIDs of a pod's running containers, by
// container name (for tests that check processes are gone).
func (c *Cluster) ContainerPIDs(namespace, pod string) map[string]int {
	return c.node.containerPIDs(namespace, pod)
}

// trackCreatedPath records a host path the harness created as a mount point.
func (c *Cluster) trackCreatedPath(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.createdPaths {
		if q == p {
			return
		}
	}
	c.createdPaths = append(c.createdPaths, p)
	logCreated(p)
}

// CreatedPaths lists the host paths created as mount points (removed on Stop).
func (c *Cluster) CreatedPaths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.createdPaths...)
}

// workDirPrefix names the temporary work folders.
const workDirPrefix = "bind-localcluster-"

var errUnmappedImage = errors.New("image not in the localcluster image table")
