package certs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// renderCertManager produces config/certmanager's objects the way
// config/default does: namespace and namePrefix, Issuer references renamed
// through config/certmanager/kustomizeconfig.yaml, the serving Certificate's
// DNS names filled from the webhook Service by the replacements.
func renderCertManager(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	def := readKustomization(t, configDir("default"))
	if !slices.Contains(def.Resources, "../certmanager") {
		t.Fatal("config/default does not include ../certmanager")
	}
	cmDir := configDir("certmanager")
	objs := objectsOf(t, cmDir)

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
	must(t, yaml.UnmarshalStrict(readFile(t, filepath.Join(cmDir, cm.Configurations[0])), &cfg))
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
	svcName, svcNS := def.NamePrefix+svc.GetName(), def.Namespace
	for _, o := range objs {
		if ref, ok, _ := unstructured.NestedString(o.Object, "spec", "issuerRef", "name"); ok {
			if find(objs, "Issuer", ref) == nil {
				t.Fatalf("%s %s references Issuer %q, which config/certmanager does not define", o.GetKind(), o.GetName(), ref)
			}
			must(t, unstructured.SetNestedField(o.Object, def.NamePrefix+ref, "spec", "issuerRef", "name"))
		}
		if names, ok, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames"); ok {
			applyServiceReplacements(t, def.Replacements, o.GetName(), names, svc.GetName(), svcName, svcNS)
			must(t, unstructured.SetNestedStringSlice(o.Object, names, "spec", "dnsNames"))
		}
	}
	for _, o := range objs {
		o.SetName(def.NamePrefix + o.GetName())
		o.SetNamespace(def.Namespace)
	}
	return objs
}

// TestCertManagerObjectsMatchCertManagerSchemas creates the rendered Issuers
// and Certificates against cert-manager v1.21.2's real CRDs with strict field
// validation: a misspelt or misplaced field, or a value outside an enum,
// is rejected by the API server exactly as it would be in a cluster.
func TestCertManagerObjectsMatchCertManagerSchemas(t *testing.T) {
	objs := renderCertManager(t)
	ns := objs[0].GetNamespace()
	must(t, client.IgnoreAlreadyExists(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))

	kinds := map[string]int{}
	for _, o := range objs {
		if err := k8sClient.Create(ctx, o, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%s %s rejected by cert-manager's schema: %v", o.GetKind(), o.GetName(), err)
		}
		kinds[o.GetKind()]++
	}
	if kinds["Issuer"] != 2 || kinds["Certificate"] != 2 {
		t.Fatalf("want the self-signed Issuer, CA Certificate, CA Issuer and serving Certificate, got %v", kinds)
	}

	serving := &unstructured.Unstructured{}
	serving.SetGroupVersionKind(objs[0].GroupVersionKind().GroupVersion().WithKind("Certificate"))
	must(t, k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bind-operator-serving-cert"}, serving))
	names, _, _ := unstructured.NestedStringSlice(serving.Object, "spec", "dnsNames")
	want := []string{"bind-operator-webhook-service.bind-operator-system.svc", "bind-operator-webhook-service.bind-operator-system.svc.cluster.local"}
	if !slices.Equal(names, want) {
		t.Errorf("serving Certificate dnsNames %v, want %v", names, want)
	}
	if s, _, _ := unstructured.NestedString(serving.Object, "spec", "secretName"); s != "webhook-server-cert" {
		t.Errorf("serving Certificate secretName %q, want webhook-server-cert", s)
	}

	// The schemas are really enforced: the same objects with one mistake
	// each are refused.
	for name, mutate := range map[string]func(o *unstructured.Unstructured){
		"unknown field": func(o *unstructured.Unstructured) { o.Object["spec"].(map[string]any)["dnsName"] = "typo" },
		"key algorithm not in enum": func(o *unstructured.Unstructured) {
			must(t, unstructured.SetNestedField(o.Object, "DSA", "spec", "privateKey", "algorithm"))
		},
		"usage not in enum": func(o *unstructured.Unstructured) {
			must(t, unstructured.SetNestedStringSlice(o.Object, []string{"server authentication"}, "spec", "usages"))
		},
	} {
		bad := find(renderCertManager(t), "Certificate", "bind-operator-serving-cert")
		bad.SetName("bad-" + strings.ReplaceAll(name, " ", "-"))
		mutate(bad)
		if err := k8sClient.Create(ctx, bad, client.FieldValidation("Strict")); err == nil {
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
