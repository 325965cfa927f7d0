package inputs

import (
	"context"
	"encoding/base64"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/render"
)

// inputsFixture is a namespace with cluster "dns" (three zones, one with
// its own update key) and the keys' Secrets, read through a fake client
// that counts how often BindZones are listed.
type inputsFixture struct {
	c          client.Client
	cluster    *bindv1alpha1.BindCluster
	zone       *bindv1alpha1.BindZone
	zoneLists  *int
	controlKey render.TSIGKey
}

func newInputsFixture(t *testing.T, extra ...client.Object) inputsFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	NewWithT(t).Expect(corev1.AddToScheme(scheme)).To(Succeed())
	const ns = "ns"
	secret := base64.StdEncoding.EncodeToString(make([]byte, 32))
	key := func(name string) []client.Object {
		// As the BindTSIGKey reconciler generates it: the Secret is the
		// key's own (KeySecretUsable).
		k := &bindv1alpha1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}, Spec: bindv1alpha1.BindTSIGKeySpec{SecretName: name + "-tsig"}}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-tsig"}, Data: map[string][]byte{bindv1alpha1.TSIGSecretKey: []byte(secret)}}
		NewWithT(t).Expect(controllerutil.SetControllerReference(k, s, scheme)).To(Succeed())
		return []client.Object{k, s}
	}
	zone := func(name, cluster, updateKey string) *bindv1alpha1.BindZone {
		z := &bindv1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: bindv1alpha1.BindZoneSpec{
			ClusterRef: bindv1alpha1.LocalObjectReference{Name: cluster}, ZoneName: bindv1alpha1.DomainName(name + ".example"), Type: bindv1alpha1.ZonePrimary}}
		if updateKey != "" {
			z.Spec.UpdateKeyRef = &bindv1alpha1.LocalObjectReference{Name: updateKey}
		}
		return z
	}
	f := inputsFixture{
		cluster: &bindv1alpha1.BindCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns", UID: "uid-dns"}, Spec: bindv1alpha1.BindClusterSpec{
			Mode: bindv1alpha1.ModeAuthoritative, TransferKeyRef: &bindv1alpha1.LocalObjectReference{Name: "transfer"}}},
		zone:       zone("a", "dns", ""),
		zoneLists:  new(int),
		controlKey: render.TSIGKey{Name: bindv1alpha1.ControlKeyName, Algorithm: string(bindv1alpha1.TSIGHMACSHA256), Secret: secret},
	}
	objs := append([]client.Object{f.cluster, f.zone, zone("b", "dns", "b-update"), zone("c", "dns", ""), zone("other", "other", "")}, extra...)
	objs = append(objs, key("transfer")...)
	objs = append(objs, key("b-update")...)
	f.c = interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*bindv1alpha1.BindZoneList); ok {
				*f.zoneLists++
			}
			return c.List(ctx, list, opts...)
		},
	})
	return f
}

func zoneNames(zones []bindv1alpha1.BindZone) []string {
	var out []string
	for _, z := range zones {
		out = append(out, z.Name)
	}
	return out
}

// The cluster's render gathers every zone of the cluster, listed once.
func TestGatherInputHoldsEveryZoneOfTheCluster(t *testing.T) {
	f := newInputsFixture(t)
	in, err := GatherInput(context.Background(), f.c, nil, f.cluster, "198.19.0.10", f.controlKey, render.DefaultPaths())
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(zoneNames(in.Zones)).To(ConsistOf("a", "b", "c"))
	g.Expect(in.Keys).To(HaveKey("b-update"))
	g.Expect(*f.zoneLists).To(Equal(1))
}

// One zone's clause gathers that zone alone and lists no zone: a BindZone
// reconcile must not cost O(zones of the cluster).
func TestGatherZoneInputListsNoZone(t *testing.T) {
	f := newInputsFixture(t)
	in, err := GatherZoneInput(context.Background(), f.c, nil, f.cluster, f.zone, "198.19.0.10", f.controlKey, render.DefaultPaths())
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(zoneNames(in.Zones)).To(Equal([]string{"a"}))
	g.Expect(in.Keys).To(HaveKey("transfer"), "the cluster's transfer key")
	g.Expect(in.Keys).NotTo(HaveKey("b-update"), "another zone's update key")
	g.Expect(*f.zoneLists).To(BeZero())
	_, err = render.NewZoneClauses(in)
	g.Expect(err).NotTo(HaveOccurred())
}

// A cluster that forwards to another by clusterRef still learns the zones
// that cluster serves (their DS records): then the zones are listed, once.
func TestGatherZoneInputListsZonesForForwardees(t *testing.T) {
	other := &bindv1alpha1.BindCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", UID: "uid-other"},
		Spec: bindv1alpha1.BindClusterSpec{Mode: bindv1alpha1.ModeAuthoritative}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: clusterpods.QuerySvcName(other), Namespace: other.Namespace}} // its query Service
	svc.Spec.ClusterIP = "198.19.0.20"
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	NewWithT(t).Expect(controllerutil.SetControllerReference(other, svc, scheme)).To(Succeed())
	f := newInputsFixture(t, other, svc)
	f.cluster.Spec.Recursion = &bindv1alpha1.RecursionSpec{Forwarders: []bindv1alpha1.Forwarder{{ClusterRef: &bindv1alpha1.LocalObjectReference{Name: "other"}}}}
	in, err := GatherZoneInput(context.Background(), f.c, nil, f.cluster, f.zone, "198.19.0.10", f.controlKey, render.DefaultPaths())
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(zoneNames(in.Zones)).To(Equal([]string{"a"}))
	g.Expect(in.Forwardees).To(HaveKey("other"))
	g.Expect(in.Forwardees["other"].Zones).To(HaveKey("other.example"))
	g.Expect(*f.zoneLists).To(Equal(1))
}
