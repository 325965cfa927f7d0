// Package e2e installs and runs the operator exactly as a user does, on the
// real one-node cluster of test/localcluster: the checkout is built as a
// release (hack/build-images.sh and hack/release.sh: images tagged with its
// version and pushed to the cluster's registry, the install files and the
// Helm chart package), and the operator is installed from those artifacts —
// `helm install` of the chart by default, or `kubectl apply --server-side
// -f` of the install files — and runs as a pod with the release's own
// ServiceAccount, RBAC and securityContext. The node pulls the images from
// the registry by tag; BIND pods run from the release's default image
// under a real kubelet, containerd and runc; Services go through
// kube-proxy. The end-to-end tests and `make demo` both start it through
// Start.
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

// The names every install path produces.
const (
	// OperatorNamespace is where the operator is installed.
	OperatorNamespace = "bind-operator-system"
	// OperatorDeployment is the operator's Deployment in OperatorNamespace.
	OperatorDeployment = "bind-operator-controller-manager"
	// HelmRelease is the Helm release name the tests and the demo use.
	HelmRelease = "bind-operator"
	// operatorSelector selects the operator's pods.
	operatorSelector = "control-plane=controller-manager,app.kubernetes.io/name=bind-operator"
)

// Install is how the operator is installed.
type Install string

// The install paths of the README.
const (
	// InstallHelm is `helm install` of the release's chart package with
	// its default values (webhook TLS issued by the operator itself).
	InstallHelm Install = "helm"
	// InstallManifests is `kubectl apply --server-side -f crds.yaml -f
	// install.yaml` (webhook TLS issued by the operator itself).
	InstallManifests Install = "install.yaml"
	// InstallManifestsCertManager is `kubectl apply --server-side -f
	// crds.yaml -f install-cert-manager.yaml`; cert-manager must be there
	// first (Options.BeforeInstall).
	InstallManifestsCertManager Install = "install-cert-manager.yaml"
)

// Release is one version of the operator built from this checkout: its
// images pushed to the registry, its install files and chart in Dir.
type Release struct {
	Version string
	Dir     string
}

// Chart is the release's Helm chart package.
func (r Release) Chart() string {
	return filepath.Join(r.Dir, "bind-operator-"+strings.TrimPrefix(r.Version, "v")+".tgz")
}

// File is one of the release's install files (crds.yaml, install.yaml,
// install-cert-manager.yaml).
func (r Release) File(name string) string { return filepath.Join(r.Dir, name) }

// OperatorImage is the release's operator (and agent) image.
func (r Release) OperatorImage() string { return testkit.OperatorImage(r.Version) }

// BindImage is the release's BIND image, the default of BindClusters.
func (r Release) BindImage() string { return testkit.BindImage(r.Version) }

// Options configure Start.
type Options struct {
	// Install is how the operator is installed (default InstallHelm).
	Install Install
	// Version is the version the checkout is built as (default
	// testkit.Version(): $VERSION or hack/version.sh).
	Version string
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

// Env is a local cluster with the operator installed from a release.
type Env struct {
	Cluster *localcluster.Cluster
	// Client is a cluster admin with the project's scheme; it reads the
	// API server directly (no cache).
	Client client.WithWatch
	// Release is the release the operator runs now, installed as
	// Installed says.
	Release   Release
	Installed Install

	logf     func(format string, args ...any)
	mu       sync.Mutex
	cleanups []func()
}

// Start builds the checkout as a release (cached), starts the local
// cluster, installs the release as a user would, and returns once the
// operator's Deployment is Available and its mutating webhook defaults
// objects. On error everything it started is stopped, and the error
// carries the operator's pods, events and logs when it got that far.
func Start(ctx context.Context, opts Options) (*Env, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opts.Install == "" {
		opts.Install = InstallHelm
	}
	if opts.Version == "" {
		opts.Version = testkit.Version()
	}
	began := time.Now()
	release, err := BuildRelease(ctx, logf, opts.Version, "")
	if err != nil {
		return nil, err
	}
	logf("release %s built in %s; starting the local cluster", release.Version, time.Since(began).Round(100*time.Millisecond))
	cluster, err := localcluster.Start(ctx, localcluster.Options{Logf: logf, KeepWorkDir: opts.KeepWorkDir, APIServerProfiling: opts.APIServerProfiling})
	if err != nil {
		return nil, err
	}
	e := &Env{Cluster: cluster, logf: logf}
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
	if err := e.InstallRelease(ctx, release, opts.Install); err != nil {
		err = fmt.Errorf("%w\n%s\noperator logs (tails):\n%s", err, e.DescribeOperator(ctx), e.OperatorLogTails(ctx, 6000))
		e.Stop()
		return nil, err
	}
	logf("operator %s installed with %s and serving its webhooks (%s since Start)", release.Version, opts.Install, time.Since(began).Round(100*time.Millisecond))
	return e, nil
}

// BuildRelease builds the checkout as version: `hack/build-images.sh`
// (the images, pushed to pushTo, host:port of a running registry, or when
// empty to the registry storage the local cluster serves) and
// `hack/release.sh` (the install files and the chart package, in
// bin/release/<version>). Everything is cached: an unchanged checkout
// builds nothing.
func BuildRelease(ctx context.Context, logf func(format string, args ...any), version, pushTo string) (Release, error) {
	root := testkit.RepoRoot()
	r := Release{Version: version, Dir: filepath.Join(root, "bin", "release", version)}
	env := []string{"VERSION=" + version}
	if pushTo != "" {
		env = append(env, "PUSH_REGISTRY="+pushTo)
	}
	for _, step := range [][]string{
		{filepath.Join(root, "hack", "build-images.sh"), filepath.Join(root, "bin", "images")},
		{filepath.Join(root, "hack", "release.sh"), "manifests", version, r.Dir},
		{filepath.Join(root, "hack", "release.sh"), "chart", version, r.Dir},
	} {
		if err := runLogged(ctx, logf, env, step...); err != nil {
			return r, err
		}
	}
	return r, nil
}

// runLogged runs a command of the repository, its output going to logf
// line by line and its last lines into the error.
func runLogged(ctx context.Context, logf func(format string, args ...any), env []string, args ...string) error {
	root := testkit.RepoRoot()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if _, err := os.Stat(filepath.Join(root, "bin", "k8s", "kubectl")); err == nil {
		cmd.Env = append(cmd.Env, "KUBECTL="+filepath.Join(root, "bin", "k8s", "kubectl"))
	}
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(args[0]), err)
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
		rel, _ := filepath.Rel(root, args[0])
		return fmt.Errorf("%s %s: %v\n%s", rel, strings.Join(args[1:], " "), err, strings.Join(last, "\n"))
	}
	return nil
}

// Helm runs the Helm of bin/tools against the cluster and returns what it
// printed on stdout; its stderr goes into the error.
func (e *Env) Helm(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(testkit.RepoRoot(), "bin", "tools", "helm"),
		append([]string{"--kubeconfig", e.Cluster.KubeconfigPath()}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out), nil
}

// InstallRelease installs r as how says — or upgrades to it, when the
// operator is already installed the same way — and waits until every
// replica of the operator runs r's image and its webhooks answer.
func (e *Env) InstallRelease(ctx context.Context, r Release, how Install) error {
	var out string
	var err error
	switch how {
	case InstallHelm:
		if e.Installed == InstallHelm {
			// An upgrade, as docs/upgrading.md says: Helm never upgrades
			// the CRDs it installed, so the new release's go first.
			e.logf("helm show crds %s | kubectl apply --server-side --force-conflicts -f -", filepath.Base(r.Chart()))
			crds, err := e.Helm(ctx, "show", "crds", r.Chart())
			if err != nil {
				return err
			}
			if out, err = e.Kubectl(ctx, crds, "apply", "--server-side", "--force-conflicts", "-f", "-"); err != nil {
				return err
			}
			e.logf("%s", strings.TrimSpace(out))
		}
		e.logf("helm upgrade --install %s %s -n %s --create-namespace", HelmRelease, filepath.Base(r.Chart()), OperatorNamespace)
		out, err = e.Helm(ctx, "upgrade", "--install", HelmRelease, r.Chart(), "--namespace", OperatorNamespace, "--create-namespace")
	case InstallManifests, InstallManifestsCertManager:
		e.logf("kubectl apply --server-side -f crds.yaml -f %s (%s)", how, r.Version)
		out, err = e.Cluster.Kubectl(ctx, "apply", "--server-side", "-f", r.File("crds.yaml"), "-f", r.File(string(how)))
	default:
		return fmt.Errorf("unknown install %q", how)
	}
	if err != nil {
		return err
	}
	e.logf("%s", strings.TrimSpace(out))
	e.Release, e.Installed = r, how
	return e.awaitOperator(ctx, r.OperatorImage(), time.Time{})
}

// Uninstall removes the operator as it was installed: `helm uninstall`,
// or `kubectl delete -f` of the install file. The CRDs, and so every
// BIND object and the BIND pods, stay.
func (e *Env) Uninstall(ctx context.Context) error {
	var err error
	switch e.Installed {
	case InstallHelm:
		_, err = e.Helm(ctx, "uninstall", HelmRelease, "--namespace", OperatorNamespace, "--wait", "--timeout", "3m")
	case InstallManifests, InstallManifestsCertManager:
		_, err = e.Cluster.Kubectl(ctx, "delete", "--wait", "--timeout", "3m", "-f", e.Release.File(string(e.Installed)))
	default:
		return errors.New("the operator is not installed")
	}
	if err == nil {
		e.Installed = ""
	}
	return err
}

// awaitOperator waits until the operator's Deployment has rolled out: every
// replica runs image, is ready, was created at or after since, and no
// other replica is left; then until its webhooks answer.
func (e *Env) awaitOperator(ctx context.Context, image string, since time.Time) error {
	e.logf("waiting for Deployment %s/%s to run %s on every replica", OperatorNamespace, OperatorDeployment, image)
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		var dep appsv1.Deployment
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: OperatorDeployment}, &dep); err != nil {
			last = err.Error()
			return false, nil
		}
		want := int32(1)
		if dep.Spec.Replicas != nil {
			want = *dep.Spec.Replicas
		}
		last = fmt.Sprintf("replicas %d, updated %d, ready %d, available %d (want %d)", dep.Status.Replicas, dep.Status.UpdatedReplicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas, want)
		if got := managerImage(dep.Spec.Template.Spec.Containers); got != image {
			last = fmt.Sprintf("the Deployment's manager image is %q, not %s", got, image)
			return false, nil
		}
		if dep.Status.ObservedGeneration != dep.Generation || dep.Status.UpdatedReplicas != want ||
			dep.Status.ReadyReplicas != want || dep.Status.AvailableReplicas != want || dep.Status.Replicas != want {
			return false, nil
		}
		pods, err := e.OperatorPods(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, p := range pods {
			if p.DeletionTimestamp != nil || managerImage(p.Spec.Containers) != image || p.CreationTimestamp.Time.Before(since) {
				last = fmt.Sprintf("pod %s (%s, created %s) still runs", p.Name, managerImage(p.Spec.Containers), p.CreationTimestamp)
				return false, nil
			}
		}
		return len(pods) == int(want), nil
	})
	if err != nil {
		return fmt.Errorf("Deployment %s/%s did not roll out %s within 5m: %s", OperatorNamespace, OperatorDeployment, image, last)
	}
	// Available means the webhook server listens; the API server also
	// needs the Service's endpoints and (self-managed) the injected CA.
	return e.awaitWebhooks(ctx)
}

// managerImage is the image of the container named manager ("" if none).
func managerImage(containers []corev1.Container) string {
	for _, c := range containers {
		if c.Name == "manager" {
			return c.Image
		}
	}
	return ""
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
