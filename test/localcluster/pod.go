package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// defaultPATH is the PATH of every container unless the pod sets one.
const defaultPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// privateDirs get a fresh per-pod folder bind-mounted over them (when they
// exist on the host), so pods do not share named's pid file, managed keys
// or temporary files with each other or with the host.
var privateDirs = []string{"/tmp", "/run/named", "/var/cache/bind"}

// podWorker runs one pod: its network, volumes and containers. Everything
// it creates is removed by cleanup when run returns.
type podWorker struct {
	node      *node
	uid       types.UID
	namespace string
	name      string
	ctx       context.Context
	cancel    context.CancelFunc
	dir       string
	wake      chan struct{}

	mu         sync.Mutex
	net        *podNet
	podIP      netip.Addr
	volDirs    map[string]string
	volHash    map[string]string
	lastVol    time.Time
	init       []*container
	containers []*container
	initDone   bool
	netReady   bool
	startTime  metav1.Time
	setupErr   string // why the pod cannot start yet (status/event)
	setupWhy   string // reason word
}

type container struct {
	spec    corev1.Container
	isInit  bool
	logPath string

	cmd          *exec.Cmd
	pid          int
	exited       chan struct{}
	exitCode     int
	running      bool
	everStarted  bool
	startedAt    metav1.Time
	finishedAt   metav1.Time
	restartCount int32
	lastTerm     *corev1.ContainerStateTerminated
	done         bool // terminated and will not restart (init success, restartPolicy)
	waitReason   string
	waitMsg      string
	nextStart    time.Time
	ready        bool
	liveFailed   bool
	probeCancel  context.CancelFunc
	argv0        string
}

func newPodWorker(n *node, p *corev1.Pod) *podWorker {
	ctx, cancel := context.WithCancel(n.ctx)
	w := &podWorker{
		node: n, uid: p.UID, namespace: p.Namespace, name: p.Name, ctx: ctx, cancel: cancel,
		dir:     filepath.Join(n.c.workDir, "pods", p.Namespace+"_"+p.Name+"_"+string(p.UID)),
		wake:    make(chan struct{}, 1),
		volDirs: map[string]string{}, volHash: map[string]string{},
	}
	logDir := filepath.Join(n.c.workDir, "logs", p.Namespace, p.Name)
	for _, s := range p.Spec.InitContainers {
		w.init = append(w.init, &container{spec: s, isInit: true, logPath: filepath.Join(logDir, s.Name+".log")})
	}
	for _, s := range p.Spec.Containers {
		w.containers = append(w.containers, &container{spec: s, logPath: filepath.Join(logDir, s.Name+".log")})
	}
	w.initDone = len(w.init) == 0
	return w
}

func (w *podWorker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *podWorker) ip() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.podIP.IsValid() {
		return ""
	}
	return w.podIP.String()
}

func (w *podWorker) pids() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for _, c := range append(append([]*container(nil), w.init...), w.containers...) {
		if c.running {
			out[c.spec.Name] = c.pid
		}
	}
	return out
}

// pod is the current object from the cache (nil once it is gone).
func (w *podWorker) pod() *corev1.Pod {
	p, err := w.node.podLister.Pods(w.namespace).Get(w.name)
	if err != nil || p.UID != w.uid {
		return nil
	}
	return p
}

func (w *podWorker) run() {
	defer w.cleanup()
	w.startTime = metav1.Unix(time.Now().Unix(), 0)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		p := w.pod()
		if p == nil {
			return
		}
		if p.DeletionTimestamp != nil {
			w.terminate(p)
			return
		}
		w.step(p)
		w.pushStatus(p)
		select {
		case <-w.ctx.Done():
			return
		case <-tick.C:
		case <-w.wake:
		}
	}
}

// step advances the pod by one level-based pass.
func (w *podWorker) step(p *corev1.Pod) {
	if w.net == nil {
		ip, seq, err := w.node.c.ipam.allocate()
		if err != nil {
			w.fail(p, "NetworkNotReady", err.Error())
			return
		}
		n, err := createPodNet(w.ctx, ip, seq)
		if err != nil {
			w.node.c.ipam.release(ip)
			w.fail(p, "NetworkNotReady", "create pod network: "+err.Error())
			return
		}
		w.mu.Lock()
		w.net, w.podIP, w.netReady = n, ip, true
		w.mu.Unlock()
	}
	if err := w.syncVolumes(p, false); err != nil {
		w.fail(p, "ContainerCreating", "volumes: "+err.Error())
		return
	}
	w.setupErr, w.setupWhy = "", ""
	if time.Since(w.lastVol) > 2*time.Second {
		_ = w.syncVolumes(p, true) // ConfigMap/Secret updates, like the kubelet's resync
	}
	if !w.initDone {
		for _, c := range w.init {
			if c.done {
				continue
			}
			w.reap(p, c)
			if c.running || c.done {
				if c.done {
					continue
				}
				return
			}
			if time.Now().After(c.nextStart) {
				w.start(p, c)
			}
			return
		}
		w.initDone = true
	}
	for _, c := range w.containers {
		w.reap(p, c)
		if c.running && c.liveFailed {
			w.node.event(p, corev1.EventTypeNormal, "Killing", fmt.Sprintf("Container %s failed liveness probe, will be restarted", c.spec.Name))
			w.stop(c, 2*time.Second, false)
			w.reap(p, c)
		}
		if !c.running && !c.done && time.Now().After(c.nextStart) {
			w.start(p, c)
		}
	}
}

func (w *podWorker) fail(p *corev1.Pod, why, msg string) {
	if w.setupErr != msg {
		w.node.event(p, corev1.EventTypeWarning, "FailedMount", msg)
	}
	w.setupErr, w.setupWhy = msg, why
}

// reap notices an exited container and decides whether it restarts.
func (w *podWorker) reap(p *corev1.Pod, c *container) {
	if !c.running {
		return
	}
	select {
	case <-c.exited:
	default:
		return
	}
	if c.probeCancel != nil {
		c.probeCancel()
	}
	w.mu.Lock()
	c.running, c.ready, c.liveFailed = false, false, false
	w.mu.Unlock()
	reason := "Completed"
	if c.exitCode != 0 {
		reason = "Error"
	}
	c.lastTerm = &corev1.ContainerStateTerminated{ExitCode: int32(c.exitCode), Reason: reason,
		StartedAt: c.startedAt, FinishedAt: c.finishedAt, ContainerID: c.containerID(w)}
	policy := p.Spec.RestartPolicy
	switch {
	case c.isInit && c.exitCode == 0:
		c.done = true
		return
	case policy == corev1.RestartPolicyNever && !c.isInit,
		policy == corev1.RestartPolicyOnFailure && c.exitCode == 0 && !c.isInit:
		c.done = true
		return
	}
	// Back off like the kubelet (shorter: 1 s doubling up to 10 s).
	delay := time.Second << min(c.restartCount, 4)
	if delay > 10*time.Second {
		delay = 10 * time.Second
	}
	c.nextStart = time.Now().Add(delay)
	c.restartCount++
	c.waitReason, c.waitMsg = "CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container %s (exit %d); log %s", delay, c.spec.Name, c.exitCode, c.logPath)
}

func (c *container) containerID(w *podWorker) string {
	return fmt.Sprintf("localcluster://%s/%s/%d", w.uid, c.spec.Name, c.restartCount)
}

// start launches one container through the re-exec launcher.
func (w *podWorker) start(p *corev1.Pod, c *container) {
	setWait := func(reason, msg string) {
		if c.waitMsg != msg {
			w.node.event(p, corev1.EventTypeWarning, reason, fmt.Sprintf("container %s: %s", c.spec.Name, msg))
		}
		c.waitReason, c.waitMsg = reason, msg
		c.nextStart = time.Now().Add(2 * time.Second)
	}
	img, err := lookupImage(w.node.c.opts.Images, c.spec.Image)
	if err != nil {
		setWait("ImageNotMapped", err.Error())
		return
	}
	env, envMap, err := w.containerEnv(p, c.spec)
	if err != nil {
		setWait("CreateContainerConfigError", err.Error())
		return
	}
	var command, args []string
	for _, s := range c.spec.Command {
		command = append(command, expandVars(s, envMap))
	}
	for _, s := range c.spec.Args {
		args = append(args, expandVars(s, envMap))
	}
	argv := containerArgv(img, command, args)
	mounts, err := w.mounts(p, c.spec)
	if err != nil {
		setWait("CreateContainerConfigError", err.Error())
		return
	}
	spec := containerSpec{Name: c.spec.Name, NetNS: w.net.path(), Hostname: p.Name, Mounts: mounts,
		Dir: c.spec.WorkingDir, Argv: argv, Env: env}
	raw, _ := json.Marshal(spec)
	if err := os.MkdirAll(filepath.Dir(c.logPath), 0o755); err != nil {
		setWait("CreateContainerError", err.Error())
		return
	}
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		setWait("CreateContainerError", err.Error())
		return
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== localcluster %s: pod %s/%s uid %s ip %s container %s restart %d: %q\n",
		time.Now().Format(time.RFC3339), p.Namespace, p.Name, p.UID, w.podIP, c.spec.Name, c.restartCount, argv)
	self, err := os.Executable()
	if err != nil {
		setWait("CreateContainerError", err.Error())
		return
	}
	cmd := exec.Command(self)
	cmd.Args = []string{"localcluster-container"}
	cmd.Env = []string{helperEnv + "=" + string(raw)}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := w.node.c.spawn.start(cmd); err != nil {
		setWait("CreateContainerError", err.Error())
		return
	}
	exited := make(chan struct{})
	c.exited = exited
	go func() {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
		c.exitCode = code
		c.finishedAt = metav1.Unix(time.Now().Unix(), 0)
		close(exited)
		w.poke()
	}()
	w.mu.Lock()
	c.cmd, c.pid, c.running, c.everStarted = cmd, cmd.Process.Pid, true, true
	c.ready = c.spec.ReadinessProbe == nil
	c.liveFailed = false
	w.mu.Unlock()
	c.startedAt = metav1.Unix(time.Now().Unix(), 0)
	c.waitReason, c.waitMsg = "", ""
	c.argv0 = argv[0]
	w.node.event(p, corev1.EventTypeNormal, "Started", fmt.Sprintf("Started container %s (pid %d)", c.spec.Name, c.pid))
	if !c.isInit {
		pctx, cancel := context.WithCancel(w.ctx)
		c.probeCancel = cancel
		w.startProbes(pctx, p, c)
	}
}

// stop runs the preStop exec hook (bounded by the grace period), then
// SIGTERM, then SIGKILL at the deadline, to the container's process group.
func (w *podWorker) stop(c *container, grace time.Duration, hook bool) {
	if !c.running || c.cmd == nil {
		return
	}
	deadline := time.Now().Add(grace)
	if hook && c.spec.Lifecycle != nil && c.spec.Lifecycle.PreStop != nil && c.spec.Lifecycle.PreStop.Exec != nil {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		_ = w.execIn(ctx, c, c.spec.Lifecycle.PreStop.Exec.Command)
		cancel()
	}
	_ = syscall.Kill(-c.pid, syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(time.Until(deadline)):
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		select {
		case <-c.exited:
		case <-time.After(5 * time.Second):
		}
	}
	// Children that left the process group still die with the namespace.
	_ = syscall.Kill(-c.pid, syscall.SIGKILL)
}

// terminate handles a graceful pod deletion: hooks, signals, then the final
// delete with grace period 0 (what the kubelet does).
func (w *podWorker) terminate(p *corev1.Pod) {
	grace := 30 * time.Second
	if p.DeletionGracePeriodSeconds != nil {
		grace = time.Duration(*p.DeletionGracePeriodSeconds) * time.Second
	}
	if max := w.node.c.opts.MaxGracePeriod; grace > max {
		grace = max
	}
	w.node.event(p, corev1.EventTypeNormal, "Killing", fmt.Sprintf("Stopping pod (grace %s)", grace))
	w.stopAll(grace, true)
	w.teardown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := w.node.c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptrInt64(0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		w.node.c.logf("finalise pod %s/%s: %v", p.Namespace, p.Name, err)
	}
}

func (w *podWorker) stopAll(grace time.Duration, hooks bool) {
	var wg sync.WaitGroup
	for _, c := range append(append([]*container(nil), w.init...), w.containers...) {
		if !c.running {
			continue
		}
		if c.probeCancel != nil {
			c.probeCancel()
		}
		wg.Add(1)
		go func(c *container) {
			defer wg.Done()
			w.stop(c, grace, hooks)
		}(c)
	}
	wg.Wait()
	w.mu.Lock()
	for _, c := range append(append([]*container(nil), w.init...), w.containers...) {
		c.running = false
	}
	w.mu.Unlock()
}

// teardown removes the pod's network (killing anything left in it) and its
// volume folders. Claim folders are kept: they belong to the claim.
func (w *podWorker) teardown() {
	if w.net != nil {
		w.net.teardown(context.Background())
		w.node.c.ipam.release(w.podIP)
		w.net = nil
	}
	_ = os.RemoveAll(w.dir)
}

// cleanup runs when the worker ends for any reason (pod gone, cluster stop).
func (w *podWorker) cleanup() {
	w.cancel()
	g := w.node.c.opts.MaxGracePeriod
	if g > 2*time.Second {
		g = 2 * time.Second
	}
	w.stopAll(g, false)
	w.teardown()
}

// execIn runs a command inside a running container's namespaces (exec
// probes, preStop hooks) with the container's environment.
func (w *podWorker) execIn(ctx context.Context, c *container, argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("empty command")
	}
	args := append([]string{"-t", fmt.Sprint(c.pid), "-m", "-n", "-u", "--"}, argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	if c.cmd != nil {
		var spec containerSpec
		for _, e := range c.cmd.Env {
			if v, ok := strings.CutPrefix(e, helperEnv+"="); ok {
				_ = json.Unmarshal([]byte(v), &spec)
			}
		}
		cmd.Env = spec.Env
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	return cmd.Run()
}

// containerEnv builds the environment: defaults, then envFrom, then env.
func (w *podWorker) containerEnv(p *corev1.Pod, s corev1.Container) ([]string, map[string]string, error) {
	n := w.node
	env := map[string]string{
		"PATH": defaultPATH, "HOME": "/root", "HOSTNAME": p.Name,
		"POD_NAME": p.Name, "POD_NAMESPACE": p.Namespace, "POD_IP": w.ip(), "NODE_NAME": p.Spec.NodeName,
	}
	order := []string{"PATH", "HOME", "HOSTNAME", "POD_NAME", "POD_NAMESPACE", "POD_IP", "NODE_NAME"}
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, ef := range s.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm, err := n.cmLister.ConfigMaps(p.Namespace).Get(ef.ConfigMapRef.Name)
			if err != nil {
				if ptrTrue(ef.ConfigMapRef.Optional) {
					continue
				}
				return nil, nil, fmt.Errorf("envFrom configmap %q: %w", ef.ConfigMapRef.Name, err)
			}
			for k, v := range cm.Data {
				set(ef.Prefix+k, v)
			}
		case ef.SecretRef != nil:
			sec, err := n.secretLister.Secrets(p.Namespace).Get(ef.SecretRef.Name)
			if err != nil {
				if ptrTrue(ef.SecretRef.Optional) {
					continue
				}
				return nil, nil, fmt.Errorf("envFrom secret %q: %w", ef.SecretRef.Name, err)
			}
			for k, v := range sec.Data {
				set(ef.Prefix+k, string(v))
			}
		}
	}
	for _, e := range s.Env {
		if e.ValueFrom == nil {
			set(e.Name, expandVars(e.Value, env))
			continue
		}
		vf := e.ValueFrom
		switch {
		case vf.FieldRef != nil:
			v, err := w.fieldValue(p, vf.FieldRef.FieldPath)
			if err != nil {
				return nil, nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			set(e.Name, v)
		case vf.ConfigMapKeyRef != nil:
			cm, err := n.cmLister.ConfigMaps(p.Namespace).Get(vf.ConfigMapKeyRef.Name)
			v, ok := "", false
			if err == nil {
				v, ok = cm.Data[vf.ConfigMapKeyRef.Key]
			}
			if !ok && !ptrTrue(vf.ConfigMapKeyRef.Optional) {
				return nil, nil, fmt.Errorf("env %s: configmap %q key %q not found", e.Name, vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key)
			}
			if ok {
				set(e.Name, v)
			}
		case vf.SecretKeyRef != nil:
			sec, err := n.secretLister.Secrets(p.Namespace).Get(vf.SecretKeyRef.Name)
			var v []byte
			ok := false
			if err == nil {
				v, ok = sec.Data[vf.SecretKeyRef.Key]
			}
			if !ok && !ptrTrue(vf.SecretKeyRef.Optional) {
				return nil, nil, fmt.Errorf("env %s: secret %q key %q not found", e.Name, vf.SecretKeyRef.Name, vf.SecretKeyRef.Key)
			}
			if ok {
				set(e.Name, string(v))
			}
		default:
			return nil, nil, fmt.Errorf("env %s: only fieldRef, configMapKeyRef and secretKeyRef are supported by localcluster", e.Name)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out, env, nil
}

// syncVolumes materialises the pod's volumes. With resync, only the
// ConfigMap/Secret/projected/downwardAPI payloads are refreshed.
func (w *podWorker) syncVolumes(p *corev1.Pod, resync bool) error {
	if !resync && len(w.volDirs) == len(p.Spec.Volumes) {
		return nil
	}
	w.lastVol = time.Now()
	for _, v := range p.Spec.Volumes {
		dir := filepath.Join(w.dir, "volumes", v.Name)
		switch {
		case v.ConfigMap != nil, v.Secret != nil, v.Projected != nil, v.DownwardAPI != nil:
			files, err := w.volumePayload(p, v)
			if err != nil {
				if resync {
					continue // keep the last good content
				}
				return fmt.Errorf("volume %q: %w", v.Name, err)
			}
			if h := payloadHash(files); h != w.volHash[v.Name] {
				if err := atomicWrite(dir, files); err != nil {
					return fmt.Errorf("volume %q: %w", v.Name, err)
				}
				w.volHash[v.Name] = h
			}
			w.volDirs[v.Name] = dir
		case resync:
		case v.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return err
			}
			w.volDirs[v.Name] = dir
		case v.PersistentVolumeClaim != nil:
			pvc, err := w.node.pvcLister.PersistentVolumeClaims(p.Namespace).Get(v.PersistentVolumeClaim.ClaimName)
			if err != nil {
				return fmt.Errorf("volume %q: claim %q: %w", v.Name, v.PersistentVolumeClaim.ClaimName, err)
			}
			if pvc.Status.Phase != corev1.ClaimBound {
				return fmt.Errorf("volume %q: claim %q is not bound yet", v.Name, pvc.Name)
			}
			cd := w.node.claimDir(pvc)
			if err := os.MkdirAll(cd, 0o777); err != nil {
				return err
			}
			w.volDirs[v.Name] = cd
		default:
			return fmt.Errorf("volume %q: only configMap, secret, projected, downwardAPI, emptyDir and persistentVolumeClaim volumes are supported by localcluster", v.Name)
		}
	}
	return nil
}

// mounts lists a container's bind mounts, parents before children, and
// creates on the host the mount points that do not exist (tracked and
// removed on Stop).
func (w *podWorker) mounts(p *corev1.Pod, s corev1.Container) ([]mount, error) {
	kinds := map[string]*corev1.Volume{}
	for i := range p.Spec.Volumes {
		kinds[p.Spec.Volumes[i].Name] = &p.Spec.Volumes[i]
	}
	var out []mount
	targets := map[string]bool{}
	for _, vm := range s.VolumeMounts {
		src, ok := w.volDirs[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: no such volume", vm.Name)
		}
		v := kinds[vm.Name]
		ro := vm.ReadOnly || v.ConfigMap != nil || v.Secret != nil || v.Projected != nil || v.DownwardAPI != nil
		if vm.SubPath != "" {
			sub := filepath.Clean(vm.SubPath)
			if filepath.IsAbs(sub) || strings.HasPrefix(sub, "..") {
				return nil, fmt.Errorf("volumeMount %q: invalid subPath %q", vm.Name, vm.SubPath)
			}
			src = filepath.Join(src, sub)
			if _, err := os.Lstat(src); os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
			if r, err := filepath.EvalSymlinks(src); err == nil {
				src = r
			}
		}
		fi, err := os.Stat(src)
		if err != nil {
			return nil, fmt.Errorf("volumeMount %q: %w", vm.Name, err)
		}
		target := filepath.Clean(vm.MountPath)
		if !filepath.IsAbs(target) {
			return nil, fmt.Errorf("volumeMount %q: mountPath %q is not absolute", vm.Name, vm.MountPath)
		}
		targets[target] = true
		out = append(out, mount{Source: src, Target: target, ReadOnly: ro, File: !fi.IsDir()})
	}
	for _, d := range privateDirs {
		if targets[d] {
			continue
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		src := filepath.Join(w.dir, "private", strings.ReplaceAll(strings.TrimPrefix(d, "/"), "/", "_"))
		if err := os.MkdirAll(src, 0o1777); err != nil {
			return nil, err
		}
		_ = os.Chmod(src, 0o1777)
		out = append(out, mount{Source: src, Target: d})
	}
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Count(out[i].Target, "/") < strings.Count(out[j].Target, "/")
	})
	for i, m := range out {
		nested := false
		for j := 0; j < i; j++ {
			if strings.HasPrefix(m.Target, out[j].Target+"/") {
				nested = true
			}
		}
		if nested {
			continue // created by the launcher inside the parent volume
		}
		if err := w.node.c.ensureMountPoint(m.Target, m.File); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ensureMountPoint creates a missing mount point on the host, recording
// every folder and file it creates so Stop can remove them.
func (c *Cluster) ensureMountPoint(target string, file bool) error {
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	var missing []string
	for d := filepath.Dir(target); d != "/"; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append([]string{d}, missing...)
	}
	for _, d := range missing {
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("create mount point %s: %w", d, err)
		}
		c.trackCreatedPath(d)
	}
	if file {
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil && !os.IsExist(err) {
			return fmt.Errorf("create mount point %s: %w", target, err)
		}
		if f != nil {
			_ = f.Close()
		}
	} else if err := os.Mkdir(target, 0o755); err != nil && !os.IsExist(err) {
		return fmt.Errorf("create mount point %s: %w", target, err)
	}
	c.trackCreatedPath(target)
	return nil
}
