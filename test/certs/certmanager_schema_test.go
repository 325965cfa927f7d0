package certs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// certManagerObjects are config/certmanager's objects as cert-manager's
// own Go types.
type certManagerObjects struct {
	issuers      []*cmv1.Issuer
	certificates []*cmv1.Certificate
}

// readCertManager reads config/certmanager's resources strictly into
// cert-manager's types: a field those types do not know fails here,
// before any API server sees it.
func readCertManager(t *testing.T) certManagerObjects {
	t.Helper()
	var objs certManagerObjects
	dir := configDir("certmanager")
	for _, r := range readKustomization(t, dir).Resources {
		for _, doc := range testkit.SplitYAML(readFile(t, filepath.Join(dir, r))) {
			var tm metav1.TypeMeta
			testkit.Must(t, yaml.Unmarshal(doc, &tm))
			switch tm.GroupVersionKind() {
			case cmv1.SchemeGroupVersion.WithKind(cmv1.IssuerKind):
				i := &cmv1.Issuer{}
				testkit.Must(t, yaml.UnmarshalStrict(doc, i))
				objs.issuers = append(objs.issuers, i)
			case cmv1.SchemeGroupVersion.WithKind(cmv1.CertificateKind):
				c := &cmv1.Certificate{}
				testkit.Must(t, yaml.UnmarshalStrict(doc, c))
				objs.certificates = append(objs.certificates, c)
			default:
				t.Fatalf("%s/%s holds a %s, not an Issuer or a Certificate", dir, r, tm.GroupVersionKind())
			}
		}
	}
	return objs
}

func (o certManagerObjects) issuer(name string) *cmv1.Issuer {
	for _, i := range o.issuers {
		if i.Name == name {
			return i
		}
	}
	return nil
}

func (o certManagerObjects) certificate(name string) *cmv1.Certificate {
	for _, c := range o.certificates {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func (o certManagerObjects) all() []client.Object {
	var out []client.Object
	for _, i := range o.issuers {
		out = append(out, i)
	}
	for _, c := range o.certificates {
		out = append(out, c)
	}
	return out
}

// renderCertManager produces config/certmanager's objects the way
// config/default does: namespace and namePrefix, Issuer references renamed
// through config/certmanager/kustomizeconfig.yaml, the serving Certificate's
// DNS names filled from the webhook Service by the replacements.
func renderCertManager(t *testing.T) certManagerObjects {
	t.Helper()
	def := readKustomization(t, configDir("default"))
	if !slices.Contains(def.Resources, "../certmanager") {
		t.Fatal("config/default does not include ../certmanager")
	}
	cmDir := configDir("certmanager")
	objs := readCertManager(t)

	// The name reference kustomize needs to rename issuerRef with namePrefix.
	var cfg struct {
		NameReference []struct {
			Group      string `json:"group"`
			Kind       string `json:"kind"`
			FieldSpecs []struct {
				Group string `json:"group"`
				Kind  string `json:"kind"`
				Path  string `json:"path"`
			} `json:"fieldSpecs"`
		} `json:"nameReference"`
	}
	cm := readKustomization(t, cmDir)
	if len(cm.Configurations) != 1 {
		t.Fatalf("config/certmanager must declare its kustomizeconfig, has %v", cm.Configurations)
	}
	testkit.Must(t, yaml.UnmarshalStrict(readFile(t, filepath.Join(cmDir, cm.Configurations[0])), &cfg))
	issuerRefRenamed := false
	for _, nr := range cfg.NameReference {
		for _, fs := range nr.FieldSpecs {
			if nr.Kind == "Issuer" && fs.Kind == "Certificate" && fs.Path == "spec/issuerRef/name" {
				issuerRefRenamed = true
			}
		}
	}
	if !issuerRefRenamed {
		t.Fatal("kustomizeconfig does not rename Certificate.spec.issuerRef.name with the Issuer")
	}

	svc := find(objectsOf(t, configDir("webhook")), "Service", "webhook-service")
	if svc == nil {
		t.Fatal("config/webhook has no webhook-service")
	}
	metrics := find(objectsOf(t, configDir("manager")), "Service", "controller-manager-metrics-service")
	if metrics == nil {
		t.Fatal("config/manager has no controller-manager-metrics-service")
	}
	for _, c := range objs.certificates {
		if objs.issuer(c.Spec.IssuerRef.Name) == nil {
			t.Fatalf("Certificate %s references Issuer %q, which config/certmanager does not define", c.Name, c.Spec.IssuerRef.Name)
		}
		c.Spec.IssuerRef.Name = def.NamePrefix + c.Spec.IssuerRef.Name
		for _, s := range []string{svc.GetName(), metrics.GetName()} {
			applyServiceReplacements(t, def.Replacements, c.Name, c.Spec.DNSNames, s, def.NamePrefix+s, def.Namespace)
		}
	}
	for _, o := range objs.all() {
		o.SetName(def.NamePrefix + o.GetName())
		o.SetNamespace(def.Namespace)
	}
	return objs
}

// TestCertManagerObjectsMatchCertManagerSchemas creates the rendered Issuers
// and Certificates against the real CRDs of go.mod's cert-manager with strict field
// validation: a misspelt or misplaced field, or a value outside an enum,
// is rejected by the API server exactly as it would be in a cluster.
func TestCertManagerObjectsMatchCertManagerSchemas(t *testing.T) {
	objs := renderCertManager(t)
	if len(objs.issuers) != 2 || len(objs.certificates) != 2 {
		t.Fatalf("want the self-signed Issuer, CA Certificate, CA Issuer and serving Certificate, got %d Issuers and %d Certificates", len(objs.issuers), len(objs.certificates))
	}
	ns := objs.issuers[0].Namespace
	testkit.Must(t, client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	for _, o := range objs.all() {
		if err := k8sClient.Create(ctx, o, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%T %s rejected by cert-manager's schema: %v", o, o.GetName(), err)
		}
	}

	var serving cmv1.Certificate
	testkit.Must(t, k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bind-operator-serving-cert"}, &serving))
	want := []string{"bind-operator-webhook-service.bind-operator-system.svc", "bind-operator-webhook-service.bind-operator-system.svc.cluster.local",
		"bind-operator-controller-manager-metrics-service.bind-operator-system.svc", "bind-operator-controller-manager-metrics-service.bind-operator-system.svc.cluster.local"}
	if !slices.Equal(serving.Spec.DNSNames, want) {
		t.Errorf("serving Certificate dnsNames %v, want %v", serving.Spec.DNSNames, want)
	}
	if serving.Spec.SecretName != "webhook-server-cert" {
		t.Errorf("serving Certificate secretName %q, want webhook-server-cert", serving.Spec.SecretName)
	}

	// The schemas are really enforced: the same objects with one mistake
	// each are refused.
	for name, mutate := range map[string]func(c *cmv1.Certificate) client.Object{
		// The Go types cannot hold an unknown field; its JSON can.
		"unknown field": func(c *cmv1.Certificate) client.Object {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
			testkit.Must(t, err)
			u["spec"].(map[string]any)["dnsName"] = "typo"
			typo := &unstructured.Unstructured{Object: u}
			typo.SetGroupVersionKind(cmv1.SchemeGroupVersion.WithKind(cmv1.CertificateKind))
			return typo
		},
		"key algorithm not in enum": func(c *cmv1.Certificate) client.Object {
			c.Spec.PrivateKey.Algorithm = "DSA"
			return c
		},
		"usage not in enum": func(c *cmv1.Certificate) client.Object {
			c.Spec.Usages = []cmv1.KeyUsage{"server authentication"}
			return c
		},
	} {
		bad := renderCertManager(t).certificate("bind-operator-serving-cert")
		bad.SetName("bad-" + strings.ReplaceAll(name, " ", "-"))
		if err := k8sClient.Create(ctx, mutate(bad), client.FieldValidation("Strict")); err == nil {
			t.Errorf("%s: accepted, so the test would not notice such a mistake", name)
		}
	}
}

// applyServiceReplacements does what config/default's replacements do to a
// Certificate's dnsNames: put the webhook Service's (final) name and
// namespace into the delimited parts they select.
func applyServiceReplacements(t *testing.T, reps []replacement, certName string, names []string, svcBase, svcName, svcNS string) {
	t.Helper()
	for _, r := range reps {
		if r.Source.Kind != "Service" || r.Source.Name != svcBase {
			continue
		}
		value := map[string]string{".metadata.name": svcName, ".metadata.namespace": svcNS}[r.Source.FieldPath]
		if value == "" {
			t.Fatalf("unexpected replacement source field %q", r.Source.FieldPath)
		}
		for _, tg := range r.Targets {
			if tg.Select.Kind != "Certificate" || tg.Select.Name != certName {
				continue
			}
			for _, fp := range tg.FieldPaths {
				var i int
				if _, err := fmt.Sscanf(fp, ".spec.dnsNames.%d", &i); err != nil || i >= len(names) {
					t.Fatalf("replacement target %q is not one of the %d dnsNames", fp, len(names))
				}
				parts := strings.Split(names[i], tg.Options.Delimiter)
				parts[tg.Options.Index] = value
				names[i] = strings.Join(parts, tg.Options.Delimiter)
			}
		}
	}
}
