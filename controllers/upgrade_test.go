package controllers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/webhooks"
)

// The default images TestUpgradeRollsNothing builds pod templates with.
const (
	upgradeBindImage  = "registry.example/bind-operator-bind9:release"
	upgradeAgentImage = "registry.example/bind-operator:release"
)

var updateUpgrade = flag.Bool("update-upgrade", false, "rewrite testdata/upgrade: the change rolls every BIND pod of existing clusters on upgrade, on purpose")

// TestUpgradeRollsNothing (issue 15 item 6): what decides whether an
// operator upgrade restarts the BIND pods of an existing cluster — the
// config hash and the StatefulSet's pod template — is pinned for every
// BindCluster of config/samples but the default images, which move with
// each release by design (admitted as the webhooks default them,
// keys with fixed material). A change of render or of the pod template
// fails here, so a roll on upgrade is never an accident: if it is meant,
// rerun with -update-upgrade and say in the release notes that each
// cluster rolls once.
func TestUpgradeRollsNothing(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, bindv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	objs := sampleObjects(t, scheme)
	var clusters []*bindv1alpha1.BindCluster
	for _, o := range objs {
		if err := defaultSample(ctx, o); err != nil {
			t.Fatalf("defaulting %s %s: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
		switch k := o.(type) {
		case *bindv1alpha1.BindCluster:
			clusters = append(clusters, k)
		case *bindv1alpha1.BindTSIGKey:
			// Fixed material: the golden pins what the operator makes of
			// keys, not the keys.
			sum := sha256.Sum256([]byte(k.Name))
			objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Spec.SecretName},
				Data: map[string][]byte{bindv1alpha1.TSIGSecretKey: []byte(base64.StdEncoding.EncodeToString(sum[:]))}})
		}
	}
	if len(clusters) == 0 {
		t.Fatal("config/samples holds no BindCluster")
	}
	// Each cluster's query Service, with a fixed ClusterIP: forwarders
	// naming a cluster (clusterRef) render its address.
	for i, cl := range clusters {
		cl.UID = types.UID("uid-" + cl.Name)
		svc := buildServices(cl)[2]
		svc.Spec.ClusterIP = fmt.Sprintf("198.19.0.%d", 100+i)
		if err := controllerutil.SetControllerReference(cl, svc, scheme); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, svc)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	sum := sha256.Sum256([]byte("control"))
	ctl := render.TSIGKey{Name: bindv1alpha1.ControlKeyName, Algorithm: string(bindv1alpha1.TSIGHMACSHA256), Secret: base64.StdEncoding.EncodeToString(sum[:])}
	for _, cl := range clusters {
		in, err := gatherInput(ctx, c, cl, "198.19.0.10", ctl, render.DefaultPaths())
		if err != nil {
			t.Fatal(err)
		}
		// The views' keys as a keys Secret from before the upgrade holds
		// them (fixed material).
		kept := map[string][]byte{}
		for _, v := range in.Views {
			sum := sha256.Sum256([]byte("view " + v.Name))
			kept[viewKeyEntry(v.Name)] = []byte(base64.StdEncoding.EncodeToString(sum[:]))
		}
		if in.ViewKeys, err = viewKeys(kept, in.Views, false); err != nil {
			t.Fatal(err)
		}
		rendered, err := render.Render(in)
		if err != nil {
			t.Fatalf("BindCluster %s: %v", cl.Name, err)
		}
		rendered.SecretData[controlKeyEntry] = []byte(ctl.Secret)
		keepViewKeys(rendered.SecretData, in.ViewKeys)
		hash := render.ConfigHash(rendered)
		// Fixed images: those of a cluster that pins none follow the
		// operator's release (version.BindImage, version.OperatorImage),
		// so an upgrade rolls such a cluster once onto the new ones, on
		// purpose. Everything else must stay.
		sts := buildStatefulSet(cl, ClusterOptions{BindImage: upgradeBindImage, AgentImage: upgradeAgentImage}, render.DefaultPaths(), hash)
		got, err := yaml.Marshal(struct {
			ConfigHash  string                 `json:"configHash"`
			PodTemplate corev1.PodTemplateSpec `json:"podTemplate"`
		}{hash, sts.Spec.Template})
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "upgrade", cl.Name+".yaml")
		if *updateUpgrade {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test ./controllers -run TestUpgradeRollsNothing -update-upgrade)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("BindCluster %s from config/samples: the config hash or the pod template changed, so an operator upgrade would roll every BIND pod of such a cluster once. If that is meant, rerun with -update-upgrade and say so in the release notes.\n--- want (%s)\n%s\n--- got\n%s", cl.Name, golden, want, got)
		}
	}
}

// sampleObjects decodes every object of config/samples.
func sampleObjects(t *testing.T, scheme *runtime.Scheme) []client.Object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	decode := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode
	var out []client.Object
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if err != nil {
				break
			}
			if len(strings.TrimSpace(string(doc))) == 0 {
				continue
			}
			obj, _, err := decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			co := obj.(client.Object)
			co.SetNamespace("samples")
			out = append(out, co)
		}
	}
	return out
}

// defaultSample runs the mutating webhook's defaulting, as admission does.
func defaultSample(ctx context.Context, o client.Object) error {
	switch k := o.(type) {
	case *bindv1alpha1.BindCluster:
		return (&webhooks.BindClusterWebhook{}).Default(ctx, k)
	case *bindv1alpha1.BindZone:
		return (&webhooks.BindZoneWebhook{}).Default(ctx, k)
	case *bindv1alpha1.BindTSIGKey:
		return (&webhooks.BindTSIGKeyWebhook{}).Default(ctx, k)
	case *bindv1alpha1.BindView:
		return (&webhooks.BindViewWebhook{}).Default(ctx, k)
	case *bindv1alpha1.BindACL:
		return (&webhooks.BindACLWebhook{}).Default(ctx, k)
	case *bindv1alpha1.BindCatalogZone:
		return (&webhooks.BindCatalogZoneWebhook{}).Default(ctx, k)
	case *bindv1alpha1.BindPolicy:
		return (&webhooks.BindPolicyWebhook{}).Default(ctx, k)
	case *bindv1alpha1.BindDNSSECPolicy:
		return (&webhooks.BindDNSSECPolicyWebhook{}).Default(ctx, k)
	case *bindv1alpha1.DNSRecord:
		return (&webhooks.DNSRecordWebhook{}).Default(ctx, k)
	}
	return nil
}
