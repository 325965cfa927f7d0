package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a running local cluster.
type Cluster struct {
	opts    Options
	state   *state
	lock    *HostLock
	ownLock bool

	caPEM       []byte
	adminConfig *rest.Config
	client      kubernetes.Interface

	daemons                        []*daemon
	etcdURL                        string
	apiserver                      *daemon // the one running now
	kcm, scheduler, kubelet, proxy *daemon
	bgCtx                          context.Context
	bgCancel                       context.CancelFunc
	bg                             sync.WaitGroup
	stopOnce                       sync.Once
}

// Start brings up the cluster: host network, control plane, node (images
// imported), default StorageClass. It first sweeps whatever a crashed run
// left on the host. On error everything started so far is removed.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if err := checkPrerequisites(&opts); err != nil {
		return nil, err
	}
	if opts.LockWait == 0 {
		opts.LockWait = 10 * time.Minute
	}
	lock, ownLock := opts.HostLock, false
	if lock == nil {
		if lock, err = LockHost(ctx, opts.LockWait); err != nil {
			return nil, err
		}
		ownLock = true
	}
	release := func() {
		if ownLock {
			lock.Unlock()
		}
	}
	if err := lock.SweepLeftovers(ctx, opts.logf); err != nil {
		release()
		return nil, err
	}
	if err := opts.defaults(); err != nil {
		release()
		return nil, err
	}
	c = &Cluster{opts: opts, lock: lock, ownLock: ownLock, state: &state{WorkDir: opts.WorkDir, KeepWorkDir: opts.KeepWorkDir}}
	c.bgCtx, c.bgCancel = context.WithCancel(context.Background())
	if err := c.state.update(func(*state) {}); err != nil {
		c.Stop()
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	began := time.Now()
	if err := c.writePKI(); err != nil {
		return nil, err
	}
	if err := c.setupNetwork(ctx); err != nil {
		return nil, err
	}
	if err := c.startControlPlane(ctx); err != nil {
		return nil, err
	}
	if err := c.startNode(ctx); err != nil {
		return nil, err
	}
	if err := c.startProvisioner(ctx); err != nil {
		return nil, err
	}
	c.opts.Logf("localcluster: up in %s (kubeconfig %s)", time.Since(began).Round(100*time.Millisecond), c.KubeconfigPath())
	return c, nil
}

// logf logs through Logf, also before defaults() has run.
func (o *Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// Stop deletes every pod (so the CNI plugin releases its addresses and the
// kubelet runs preStop hooks), stops the components and sweeps the host.
// It is idempotent and also runs after a failed Start.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		// Controllers would recreate what the kubelet tears down.
		for _, d := range []*daemon{c.kcm, c.scheduler} {
			if d != nil {
				d.stop(5 * time.Second)
			}
		}
		if c.kubelet != nil && c.kubelet.exited(c) == nil && c.client != nil {
			if err := c.deleteAllPods(ctx, 60*time.Second); err != nil {
				c.opts.Logf("localcluster: %v (the sweep kills what is left)", err)
			}
		}
		c.bgCancel()
		c.bg.Wait()
		for i := len(c.daemons) - 1; i >= 0; i-- {
			c.daemons[i].stop(10 * time.Second)
		}
		if problems := sweep(ctx, c.state); len(problems) > 0 {
			c.opts.Logf("localcluster: cleanup incomplete: %s", strings.Join(problems, "; "))
		}
		if c.ownLock {
			c.lock.Unlock()
		}
	})
}

// Config is an admin's REST config.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.adminConfig) }

// Client is an admin's clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// KubeconfigPath is an admin's kubeconfig file.
func (c *Cluster) KubeconfigPath() string { return c.opts.path(adminID.file) }

// WorkDir holds the cluster's files, logs/<component>.log among them.
func (c *Cluster) WorkDir() string { return c.opts.WorkDir }

// Kubectl runs the cluster's kubectl as the admin and returns its
// combined output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.opts.bin("kubectl"), append([]string{"--kubeconfig", c.KubeconfigPath()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// restConfig loads the kubeconfig writePKI wrote for id.
func (c *Cluster) restConfig(id identity) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.opts.path(id.file))
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	return cfg, nil
}

func (c *Cluster) connect() error {
	cs, err := kubernetes.NewForConfig(c.adminConfig)
	if err != nil {
		return err
	}
	c.client = cs
	return nil
}

// HostLock is the machine-wide lock a running cluster holds: one cluster
// runs on a machine at a time.
type HostLock struct{ f *os.File }

// LockHost takes the lock, waiting up to wait while another cluster runs
// (parallel test packages serialise here). A test takes it itself to
// compare host snapshots with no other cluster running, and passes it in
// Options.HostLock. The lock dies with the process, so a crashed run never
// blocks the next one.
func LockHost(ctx context.Context, wait time.Duration) (*HostLock, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, errorf("open lock %s: %v", lockPath, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			_ = f.Truncate(0)
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			return &HostLock{f: f}, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, errorf("lock %s: %v", lockPath, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, errorf("another local cluster has held %s for more than %s", lockPath, wait)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Unlock releases the lock. It is idempotent.
func (l *HostLock) Unlock() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// SweepLeftovers removes what a run that never reached Stop (killed, or
// interrupted in a shell) left on the host, as its journal names it, and
// does nothing on a clean host. Start does this itself. A test that
// compares host snapshots calls it, holding the lock, before it takes the
// snapshot its own cluster must restore. On a machine an earlier run left
// dirty, that snapshot would otherwise hold the leftovers: Start's sweep
// of them then shows as a change (sysctls back to their values from
// before the earlier run), and a leftover the test expects a crash to add
// is there already.
//
// It refuses to run without the lock held: a sweep while another
// process's cluster runs would kill that cluster.
func (l *HostLock) SweepLeftovers(ctx context.Context, logf func(format string, args ...any)) error {
	if l == nil || l.f == nil {
		return errorf("SweepLeftovers needs the host lock held")
	}
	prev, err := loadState()
	if err != nil || prev == nil {
		return err
	}
	if logf != nil {
		logf("localcluster: removing what a previous run left (work folder %q)", prev.WorkDir)
	}
	if problems := sweep(ctx, prev); len(problems) > 0 {
		return errorf("could not clean up after a previous run: %s", strings.Join(problems, "; "))
	}
	return nil
}
