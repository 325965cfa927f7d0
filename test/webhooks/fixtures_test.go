package webhooks

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

const ns = "wh"

// podIP is the IP of a fake BIND pod outside the configured pod CIDR, to
// prove that current pod IPs are checked on their own.
const podIP = "198.19.5.5"

var (
	fixturesOnce sync.Once
	fixturesErr  error
)

func meta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: ns} }

func ref(name string) v1alpha1.LocalObjectReference { return v1alpha1.LocalObjectReference{Name: name} }

// fixtures creates the objects the bad cases refer to: an Authoritative
// cluster "auth" with a zone, a catalog and a Forward-free setup; a Resolver
// cluster "res" with a Forward zone and a policy; a cluster "viewed" that
// has a view; keys; and one BIND pod with a pod IP.
func fixtures(t *testing.T) {
	t.Helper()
	fixturesOnce.Do(func() { fixturesErr = createFixtures() })
	if fixturesErr != nil {
		t.Fatalf("fixtures: %v", fixturesErr)
	}
}

func createFixtures() error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: meta("default")},
		&v1alpha1.BindCluster{ObjectMeta: meta("auth")},
		&v1alpha1.BindCluster{ObjectMeta: meta("res"), Spec: v1alpha1.BindClusterSpec{Mode: v1alpha1.ModeResolver}},
		&v1alpha1.BindCluster{ObjectMeta: meta("viewed"), Spec: v1alpha1.BindClusterSpec{Mode: v1alpha1.ModeResolver}},
		&v1alpha1.BindView{ObjectMeta: meta("internal"), Spec: v1alpha1.BindViewSpec{ClusterRef: ref("viewed"), MatchClients: []v1alpha1.AddressMatchElement{{Builtin: "any"}}}},
		&v1alpha1.BindTSIGKey{ObjectMeta: meta("xfr")},
		&v1alpha1.BindZone{ObjectMeta: meta("example"), Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("auth"), ZoneName: "example.com", UpdateKeyRef: &v1alpha1.LocalObjectReference{Name: "xfr"},
			Records: []v1alpha1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}, {Name: "alias", Type: "CNAME", Values: []string{"www"}}}}},
		&v1alpha1.BindZone{ObjectMeta: meta("fwd"), Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("res"), ZoneName: "corp.internal", Type: v1alpha1.ZoneForward, Forwarders: []v1alpha1.Forwarder{{Address: "192.0.2.53"}}}},
		&v1alpha1.BindCatalogZone{ObjectMeta: meta("cat"), Spec: v1alpha1.BindCatalogZoneSpec{ClusterRef: ref("auth"), ZoneName: "catalog.example.internal", TransferKeyRef: ref("xfr")}},
		&v1alpha1.BindCatalogZone{ObjectMeta: meta("cat-res"), Spec: v1alpha1.BindCatalogZoneSpec{ClusterRef: ref("res"), ZoneName: "catalog.res.internal", TransferKeyRef: ref("xfr")}},
		&v1alpha1.BindPolicy{ObjectMeta: meta("rpz"), Spec: v1alpha1.BindPolicySpec{ClusterRef: ref("res"), ZoneName: "rpz.example.internal", Rules: []v1alpha1.RPZRule{{Match: "bad.example", Action: "NXDOMAIN"}}}},
		&v1alpha1.BindACL{ObjectMeta: meta("loop-b"), Spec: v1alpha1.BindACLSpec{Entries: []v1alpha1.AddressMatchElement{{ACLRef: "loop-a"}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "auth-0", Namespace: ns, Labels: map[string]string{v1alpha1.LabelCluster: "auth"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "named", Image: "bind9"}}}},
	}
	for _, o := range objs {
		if err := createWithRetry(o); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	var pod corev1.Pod
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "auth-0"}, &pod); err != nil {
		return err
	}
	pod.Status.PodIP = podIP
	pod.Status.PodIPs = []corev1.PodIP{{IP: podIP}}
	return k8sClient.Status().Update(ctx, &pod)
}

// createWithRetry creates o; a Pod is retried (20 s at most) while the
// service account admission plugin has not seen the namespace's default
// ServiceAccount yet. It returns the last error.
func createWithRetry(o client.Object) error {
	if _, isPod := o.(*corev1.Pod); !isPod {
		return k8sClient.Create(ctx, o)
	}
	var err error
	_ = testkit.Await(20*time.Second, 200*time.Millisecond, func(g Gomega) {
		err = k8sClient.Create(ctx, o)
		g.Expect(err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err)).To(BeTrue(), "creating %s: %v", o.GetName(), err)
	})
	return err
}

// expectInvalid asserts a 422 whose causes include field with msg.
func expectInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want 422 at %s: %q", field, msg)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Details == nil {
		t.Fatalf("no details in %v", err)
	}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Field == field && strings.Contains(c.Message, msg) {
			return
		}
	}
	t.Fatalf("want cause %s containing %q, got %v", field, msg, err)
}
