package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// nextOperatorImage is the "next release" hack/build-images.sh builds for
// this test (bind-operator-next): the operator's image whose render
// differs from this checkout's by the comment at the head of named.conf.
const nextOperatorImage = "git.unkin.net/unkin/bind-operator:next"

// TestOperatorUpgradeRollsEachClusterOnce (issue 15 item 6): replacing the
// operator's image with a release whose render differs rolls each
// BindCluster exactly once, while the operator's own Deployment rolls its
// two replicas one by one (old and new versions run side by side, and
// leadership moves from an old replica to a new one). Going back to the
// previous release is a render change too, and rolls each cluster once
// more. Every pod is replaced exactly once per change and the query
// Services keep answering. (controllers' TestUpgradeRollsNothing is the
// other half: a release whose render is unchanged rolls nothing.)
//
// It is not parallel: it replaces the operator the other tests share.
func TestOperatorUpgradeRollsEachClusterOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	testkit.Must(t, BuildImages(ctx, t.Logf, "bind-operator-next"))
	testkit.Must(t, env.Cluster.ImportImage(ctx, filepath.Join(testkit.RepoRoot(), "bin", "images", "next", "bind-operator.tar")))

	ns := newNamespace(ctx, t, "e2e-upgrade")
	clusters := []authoritative{
		{Namespace: ns, Name: "one", Replicas: 2, Catalog: "catalog.one.internal"},
		{Namespace: ns, Name: "two", Replicas: 3, Catalog: "catalog.two.internal"},
	}
	queryIPs := map[string]string{}
	for _, a := range clusters {
		a.create(ctx, t)
		zone := a.Name + ".upgrade.e2e.example"
		testkit.Must(t, env.Client.Create(ctx, a.catalogZone("zone-"+a.Name, zone, "")))
		t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
		a.servedByAll(ctx, t, a.Catalog, zone)
		ip, err := env.Cluster.ServiceIP(ctx, ns, a.Name)
		testkit.Must(t, err)
		queryIPs[a.Name] = ip
	}
	// Whatever happens, the tests after this one get this checkout's
	// operator back.
	t.Cleanup(func() {
		if operatorImage(context.Background(), t) != OperatorImage {
			setOperatorImage(context.Background(), t, OperatorImage)
		}
	})

	for _, step := range []struct{ what, image string }{
		{"operator upgraded to a release whose render differs", nextOperatorImage},
		{"operator downgraded to the previous release", OperatorImage},
	} {
		var watches []*rollWatch
		for _, a := range clusters {
			watches = append(watches, watchRoll(ctx, t, a, queryIPs[a.Name]))
		}
		began := time.Now()
		setOperatorImage(ctx, t, step.image)
		t.Logf("%s: the operator's Deployment rolled out %s in %s", step.what, step.image, time.Since(began).Round(100*time.Millisecond))
		for _, w := range watches {
			w.rolledOnce(ctx, t, step.what) // stops its watch and query loop
		}
		for _, a := range clusters {
			a.servedByAll(ctx, t, a.Catalog, a.Name+".upgrade.e2e.example")
		}
	}
}

// operatorImage is the image of the manager container in the operator's
// Deployment.
func operatorImage(ctx context.Context, t *testing.T) string {
	t.Helper()
	var dep appsv1.Deployment
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: OperatorDeployment}, &dep))
	return managerImage(dep.Spec.Template.Spec.Containers)
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

// setOperatorImage replaces the operator's image, as `kubectl set image`
// would, and waits until the Deployment has rolled out.
func setOperatorImage(ctx context.Context, t *testing.T, image string) {
	t.Helper()
	_, err := env.Kubectl(ctx, "", "-n", OperatorNamespace, "set", "image", "deployment/"+OperatorDeployment, "manager="+image)
	testkit.Must(t, err)
	awaitOperatorRollout(ctx, t, image, time.Time{})
}

// restartOperator replaces the operator's pods one by one (`kubectl
// rollout restart`: the webhooks keep answering) and waits until only new
// ones run.
func restartOperator(ctx context.Context, t *testing.T) {
	t.Helper()
	before := time.Now().Truncate(time.Second)
	_, err := env.Kubectl(ctx, "", "-n", OperatorNamespace, "rollout", "restart", "deployment/"+OperatorDeployment)
	testkit.Must(t, err)
	awaitOperatorRollout(ctx, t, operatorImage(ctx, t), before)
}

// awaitOperatorRollout waits until every replica of the operator's
// Deployment runs image, is ready, was created at or after since, and no
// other replica is left.
func awaitOperatorRollout(ctx context.Context, t *testing.T, image string, since time.Time) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		var dep appsv1.Deployment
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: OperatorDeployment}, &dep); err != nil {
			return err
		}
		want := *dep.Spec.Replicas
		if dep.Status.ObservedGeneration != dep.Generation || dep.Status.UpdatedReplicas != want ||
			dep.Status.ReadyReplicas != want || dep.Status.Replicas != want {
			return fmt.Errorf("replicas %d, updated %d, ready %d (want %d)", dep.Status.Replicas, dep.Status.UpdatedReplicas, dep.Status.ReadyReplicas, want)
		}
		pods, err := env.OperatorPods(ctx)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if p.DeletionTimestamp != nil || managerImage(p.Spec.Containers) != image || p.CreationTimestamp.Time.Before(since) {
				return fmt.Errorf("pod %s (%s, created %s) still runs", p.Name, managerImage(p.Spec.Containers), p.CreationTimestamp)
			}
		}
		if len(pods) != int(want) {
			return fmt.Errorf("%d operator pods, want %d", len(pods), want)
		}
		return nil
	}).WithContext(ctx).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Succeed(), "the operator's Deployment did not roll out %s", image)
	testkit.Must(t, env.awaitWebhooks(ctx))
}
