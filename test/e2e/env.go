// Package e2e installs and runs the operator exactly as a user does, on the
// real one-node cluster of test/localcluster: the images are built from
// the project's Dockerfiles (hack/build-images.sh, no registry), the
// operator is installed with `kubectl apply --server-side -k` of a shipped
// overlay (config/default-selfmanaged by default), and it runs as a pod
// with the manifests' own ServiceAccount, RBAC and securityContext. BIND
// pods run from the default image under a real kubelet, containerd and
// runc; Services go through kube-proxy. The end-to-end tests and `make
// demo` both start it through Start.
package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// The shipped install paths and the names they produce.
const (
	// OverlaySelfManaged installs without cert-manager: the operator
	// issues, injects and rotates its webhook certificate itself.
	OverlaySelfManaged = "config/default-selfmanaged"
	// OverlayCertManager installs with cert-manager's Issuer and
	// Certificate (cert-manager itself must be there: see
	// test/e2e/certmanager).
	OverlayCertManager = "config/default"
	// OperatorNamespace is where both overlays install the operator.
	OperatorNamespace = "bind-operator-system"
	// OperatorDeployment is the operator's Deployment in OperatorNamespace.
	OperatorDeployment = "bind-operator-controller-manager"
	// OperatorImage is the image config/manager's `images:` entry maps
	// the manifests' controller:latest to, and hack/build-images.sh
	// builds from ./Dockerfile.
	OperatorImage = "git.unkin.net/unkin/bind-operator:latest"
	// operatorSelector selects the operator's pods (config/manager).
	operatorSelector = "control-plane=controller-manager,app.kubernetes.io/name=bind-operator"
)

// Options configure Start.
type Options struct {
	// Overlay is the kustomize folder installed, relative to the
	// repository (default OverlaySelfManaged).
	Overlay string
	// Logf receives progress lines (default: none).
	Logf func(format string, args ...any)
	// BeforeInstall runs once the cluster is up and before the overlay is
	// applied: what a user installs first (cert-manager, for instance).
	BeforeInstall func(ctx context.Context, e *Env) error
	// KeepWorkDir keeps the cluster's work folder (component logs) after
	// Stop.
	KeepWorkDir bool
	// APIServerProfiling serves the API server's /debug/pprof
	// (localcluster.Options).
	APIServerProfiling bool
}

// Env is a local cluster with the operator installed from an overlay.
type Env struct {
	Cluster *localcluster.Cluster
	// Client is a cluster admin with the project's scheme; it reads the
	// API server directly (no cache).
	Client client.WithWatch
	// Overlay is the kustomize folder that installed the operator.
	Overlay string

	logf     func(format string, args ...any)
	mu       sync.Mutex
	cleanups []func()
}

// Start builds the images (cached), starts the local cluster, applies the
// overlay with kubectl as a user would, and returns once the operator's
// Deployment is Available and its mutating webhook defaults objects. On
// error everything it started is stopped, and the error carries the
// operator's pods, events and logs when it got that far.
func Start(ctx context.Context, opts Options) (*Env, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opts.Overlay == "" {
		opts.Overlay = OverlaySelfManaged
	}
	root := testkit.RepoRoot()
	if _, err := os.Stat(filepath.Join(root, opts.Overlay, "kustomization.yaml")); err != nil {
		return nil, fmt.Errorf("overlay %s: %w", opts.Overlay, err)
	}
	began := time.Now()
	if err := BuildImages(ctx, logf); err != nil {
		return nil, err
	}
	logf("images ready in %s; starting the local cluster", time.Since(began).Round(100*time.Millisecond))
	cluster, err := localcluster.Start(ctx, localcluster.Options{Logf: logf, KeepWorkDir: opts.KeepWorkDir, APIServerProfiling: opts.APIServerProfiling})
	if err != nil {
		return nil, err
	}
	e := &Env{Cluster: cluster, Overlay: opts.Overlay, logf: logf}
	if e.Client, err = client.NewWithWatch(cluster.Config(), client.Options{Scheme: testkit.Scheme()}); err != nil {
		e.Stop()
		return nil, err
	}
	if opts.BeforeInstall != nil {
		if err := opts.BeforeInstall(ctx, e); err != nil {
			e.Stop()
			return nil, fmt.Errorf("before installing the operator: %w", err)
		}
	}
	if err := e.install(ctx); err != nil {
		err = fmt.Errorf("%w\n%s\noperator logs (tails):\n%s", err, e.DescribeOperator(ctx), e.OperatorLogTails(ctx, 6000))
		e.Stop()
		return nil, err
	}
	logf("operator installed from %s and serving its webhooks (%s since Start)", opts.Overlay, time.Since(began).Round(100*time.Millisecond))
	return e, nil
}

// BuildImages runs `hack/build-images.sh bin/images [names]`: by default
// the pause, BIND and operator images as docker-archives the local cluster
// imports. It is cached; the operator's image is rebuilt when any file of
// the checkout changed.
func BuildImages(ctx context.Context, logf func(format string, args ...any), names ...string) error {
	root := testkit.RepoRoot()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-images.sh"), append([]string{filepath.Join(root, "bin", "images")}, names...)...)
	cmd.Dir = root
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("hack/build-images.sh: %w", err)
	}
	var last []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		logf("%s", sc.Text())
		last = append(last, sc.Text())
		if len(last) > 20 {
			last = last[1:]
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("hack/build-images.sh bin/images: %v\n%s", err, strings.Join(last, "\n"))
	}
	return nil
}

// install applies the overlay and waits until the operator serves.
func (e *Env) install(ctx context.Context) error {
	dir := filepath.Join(testkit.RepoRoot(), e.Overlay)
	e.logf("kubectl apply --server-side -k %s", e.Overlay)
	out, err := e.Cluster.Kubectl(ctx, "apply", "--server-side", "-k", dir)
	if err != nil {
		return err
	}
	e.logf("%s", strings.TrimSpace(out))

	var dep appsv1.Deployment
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: OperatorDeployment}, &dep); err != nil {
		return fmt.Errorf("the overlay made no Deployment %s/%s: %w", OperatorNamespace, OperatorDeployment, err)
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == "manager" && c.Image != OperatorImage {
			return fmt.Errorf("the overlay's manager image is %q, not the image hack/build-images.sh builds (%s): config/manager/kustomization.yaml needs an `images:` entry for controller", c.Image, OperatorImage)
		}
	}

	e.logf("waiting for Deployment %s/%s to be Available", OperatorNamespace, OperatorDeployment)
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(&dep), &dep); err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("replicas %d, updated %d, ready %d, available %d", dep.Status.Replicas, dep.Status.UpdatedReplicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas)
		for _, c := range dep.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable {
				last += fmt.Sprintf("; Available=%s %s", c.Status, c.Message)
				return c.Status == corev1.ConditionTrue && dep.Status.ObservedGeneration == dep.Generation && dep.Status.AvailableReplicas > 0, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("Deployment %s/%s not Available within 4m: %s", OperatorNamespace, OperatorDeployment, last)
	}

	// Available means the webhook server listens; the API server also
	// needs the Service's endpoints and (self-managed) the injected CA.
	return e.awaitWebhooks(ctx)
}

// awaitWebhooks waits until the operator's mutating webhook defaults a
// BindTSIGKey in a server-side dry run: until then the API server may
// still send its calls to pods that are gone (a connection it kept to a
// replaced pod answers nothing until the call's 10 s timeout).
func (e *Env) awaitWebhooks(ctx context.Context) error {
	e.logf("waiting for the mutating webhook to default a BindTSIGKey (server-side dry run)")
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		probe := &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "webhook-probe"}}
		if err := e.Client.Create(ctx, probe, client.DryRunAll); err != nil {
			last = err.Error()
			return false, nil
		}
		if want := probe.Name + v1.TSIGSecretNameSuffix; probe.Spec.SecretName != want {
			last = fmt.Sprintf("the dry-run create came back with spec.secretName %q, want %q (not defaulted by the webhook)", probe.Spec.SecretName, want)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the operator's mutating webhook did not serve within 2m: %s", last)
	}
	return nil
}

// Kubectl runs kubectl as the cluster's admin. stdin, when not empty, is
// written to a temporary file that replaces "-" after -f.
func (e *Env) Kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	if stdin != "" {
		f, err := os.CreateTemp("", "e2e-manifest-*.yaml")
		if err != nil {
			return "", err
		}
		defer os.Remove(f.Name())
		if _, err := f.WriteString(stdin); err != nil {
			f.Close()
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
		args = append([]string(nil), args...)
		replaced := false
		for i := 1; i < len(args); i++ {
			if args[i] == "-" && (args[i-1] == "-f" || args[i-1] == "--filename") {
				args[i], replaced = f.Name(), true
			}
		}
		if !replaced {
			return "", errors.New("Kubectl: stdin given but no `-f -` in the arguments")
		}
	}
	return e.Cluster.Kubectl(ctx, args...)
}

// OperatorPods lists the operator's pods, oldest first.
func (e *Env) OperatorPods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := e.Cluster.Client().CoreV1().Pods(OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: operatorSelector})
	if err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp)
	})
	return list.Items, nil
}

// OperatorLogs returns every container log of every operator pod, through
// the kubelet, with the previous instance's first when a container
// restarted.
func (e *Env) OperatorLogs(ctx context.Context) string { return e.operatorLogs(ctx, 0) }

// OperatorLogTails is OperatorLogs with each log cut to its last n bytes,
// so every pod (the leader and the standby) shows in a failure message.
func (e *Env) OperatorLogTails(ctx context.Context, n int) string { return e.operatorLogs(ctx, n) }

func (e *Env) operatorLogs(ctx context.Context, n int) string {
	pods, err := e.OperatorPods(ctx)
	if err != nil {
		return "listing the operator's pods: " + err.Error()
	}
	if len(pods) == 0 {
		return "(no operator pods)"
	}
	cut := func(l string) string {
		if n > 0 {
			return tail(l, n)
		}
		return l
	}
	var b strings.Builder
	for _, p := range pods {
		for _, st := range p.Status.ContainerStatuses {
			if st.RestartCount > 0 {
				l, err := e.Cluster.Logs(ctx, p.Namespace, p.Name, st.Name, true)
				fmt.Fprintf(&b, "===== %s/%s (previous instance, %d restarts) =====\n%s", p.Name, st.Name, st.RestartCount, logOrError(cut(l), err))
			}
			l, err := e.Cluster.Logs(ctx, p.Namespace, p.Name, st.Name, false)
			fmt.Fprintf(&b, "===== %s/%s =====\n%s", p.Name, st.Name, logOrError(cut(l), err))
		}
	}
	return b.String()
}

func logOrError(l string, err error) string {
	if err != nil {
		return fmt.Sprintf("(no log: %v)\n", err)
	}
	if !strings.HasSuffix(l, "\n") {
		l += "\n"
	}
	return l
}

// DescribeOperator summarises the operator's Deployment and pods: status,
// containers and events, for a failure message.
func (e *Env) DescribeOperator(ctx context.Context) string {
	var b strings.Builder
	dep, err := e.Cluster.Client().AppsV1().Deployments(OperatorNamespace).Get(ctx, OperatorDeployment, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(&b, "Deployment %s/%s does not exist\n", OperatorNamespace, OperatorDeployment)
	case err != nil:
		fmt.Fprintf(&b, "Deployment %s/%s: %v\n", OperatorNamespace, OperatorDeployment, err)
	default:
		fmt.Fprintf(&b, "Deployment %s/%s: generation %d (observed %d), replicas %d, ready %d, available %d\n", OperatorNamespace, OperatorDeployment,
			dep.Generation, dep.Status.ObservedGeneration, dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas)
		for _, c := range dep.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	pods, err := e.OperatorPods(ctx)
	if err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
	}
	for _, p := range pods {
		b.WriteString(e.Cluster.DescribePod(ctx, p.Namespace, p.Name))
	}
	return b.String()
}

// OnStop registers f to run when Stop is called, before the cluster
// stops (last registered, first run).
func (e *Env) OnStop(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cleanups = append(e.cleanups, f)
}

// Stop runs what OnStop registered and stops the cluster, which removes
// everything it made on the host.
func (e *Env) Stop() {
	e.mu.Lock()
	cleanups := e.cleanups
	e.cleanups = nil
	e.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	if e.Cluster != nil {
		e.Cluster.Stop()
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
