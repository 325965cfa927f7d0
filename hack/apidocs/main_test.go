package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func schema(t *testing.T, y string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.UnmarshalStrict([]byte(y), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The rows follow the Go declaration order (the schema's properties are
// alphabetical), descend into the API's own structs and lists of them, and
// stop at types of other packages.
func TestWalkOrderAndDepth(t *testing.T) {
	s := schema(t, `
type: object
required: [clusterRef]
properties:
  zoneName: {type: string}
  clusterRef:
    type: object
    required: [name]
    properties:
      name: {type: string, minLength: 1, maxLength: 253}
  records:
    type: array
    maxItems: 5000
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [name, type]
    items:
      type: object
      x-kubernetes-validations:
      - rule: "self.type != 'CNAME' || size(self.values) == 1"
        message: a CNAME record set holds exactly one value.
      properties:
        name: {type: string}
        type: {type: string, enum: [A, AAAA]}
        ttl: {type: integer, format: int32, minimum: 0, maximum: 2147483647}
        values: {type: array, items: {type: string, maxLength: 4096}}
  type: {type: string, default: Primary}
  viewRef: {type: object, properties: {name: {type: string}}}
  defaultTTL: {type: integer}
  soa: {type: object, properties: {primaryNameServer: {type: string}, responsiblePerson: {type: string}, refresh: {type: integer}, retry: {type: integer}, expire: {type: integer}, minimum: {type: integer}}}
  updateKeyRef: {type: object, properties: {name: {type: string}}}
  allowedRecords: {type: object, properties: {namespaces: {type: object, properties: {matchLabels: {type: object}}}, nameSuffixes: {type: array, items: {type: string}}, types: {type: array, items: {type: string}}}}
  allowUpdateKeyTransfer: {type: boolean}
  allowTransfer: {type: array, items: {type: object, properties: {address: {type: string}, aclRef: {type: string}, keyRef: {type: string}, builtin: {type: string}, negate: {type: boolean}}}}
  allowQuery: {type: array, items: {type: object, properties: {address: {type: string}, aclRef: {type: string}, keyRef: {type: string}, builtin: {type: string}, negate: {type: boolean}}}}
  forwarders: {type: array, items: {type: object, properties: {address: {type: string}, port: {type: integer}, clusterRef: {type: object, properties: {name: {type: string}}}}}}
  forwardPolicy: {type: string}
  primaries: {type: array, items: {type: object, properties: {address: {type: string}, port: {type: integer}, keyRef: {type: object, properties: {name: {type: string}}}}}}
  externalSecondaries: {type: array, items: {type: object, properties: {address: {type: string}, port: {type: integer}, keyRef: {type: object, properties: {name: {type: string}}}}}}
  dnssecPolicyRef: {type: object, properties: {name: {type: string}}}
  catalogZoneRef: {type: object, properties: {name: {type: string}}}
  seedFrom: {type: object, properties: {configMaps: {type: array, items: {type: object, properties: {name: {type: string}}}}, sha256: {type: string}}}
`)
	rows, err := walk(s, reflect.TypeFor[bindv1alpha1.BindZoneSpec](), "spec", true)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	byPath := map[string]row{}
	for _, r := range rows {
		paths = append(paths, r.path)
		byPath[r.path] = r
	}
	wantPrefix := []string{"spec", "spec.clusterRef", "spec.clusterRef.name", "spec.zoneName", "spec.type", "spec.viewRef", "spec.viewRef.name", "spec.defaultTTL", "spec.soa"}
	if got := paths[:len(wantPrefix)]; !reflect.DeepEqual(got, wantPrefix) {
		t.Errorf("order:\n got %v\nwant %v", got, wantPrefix)
	}
	// metav1.LabelSelector is linked, not expanded.
	if _, ok := byPath["spec.allowedRecords.namespaces.matchLabels"]; ok {
		t.Error("a type of another package was expanded")
	}
	if got := byPath["spec.allowedRecords.namespaces"].typ; !strings.Contains(got, "https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1#LabelSelector") {
		t.Errorf("namespaces type %q does not link LabelSelector", got)
	}
	for path, want := range map[string]row{
		"spec":                   {required: "required", typ: "object"},
		"spec.clusterRef.name":   {required: "required", validation: "length 1 to 253"},
		"spec.zoneName":          {required: "optional", typ: "string"},
		"spec.type":              {def: "`Primary`"},
		"spec.records":           {typ: "[]object", validation: "items at most 5000<br>unique by `name`, `type`<br>each: a CNAME record set holds exactly one value."},
		"spec.records[].type":    {validation: "one of `A`, `AAAA`"},
		"spec.records[].ttl":     {typ: "integer (int32)", validation: "value 0 to 2147483647"},
		"spec.records[].values":  {typ: "[]string", validation: "each: length at most 4096"},
		"spec.forwarders[].port": {typ: "integer"},
	} {
		got, ok := byPath[path]
		if !ok {
			t.Errorf("no row for %s", path)
			continue
		}
		if want.required != "" && got.required != want.required {
			t.Errorf("%s required = %q, want %q", path, got.required, want.required)
		}
		if want.typ != "" && got.typ != want.typ {
			t.Errorf("%s type = %q, want %q", path, got.typ, want.typ)
		}
		if want.def != "" && got.def != want.def {
			t.Errorf("%s default = %q, want %q", path, got.def, want.def)
		}
		if want.validation != "" && got.validation != want.validation {
			t.Errorf("%s validation = %q, want %q", path, got.validation, want.validation)
		}
	}
}

// A field the CRD lacks, or a property the Go type lacks, is an error:
// the CRDs are stale.
func TestWalkRefusesDrift(t *testing.T) {
	s := schema(t, `{type: object, properties: {name: {type: string}}}`)
	if _, err := walk(s, reflect.TypeFor[bindv1alpha1.LocalObjectReference](), "ref", false); err != nil {
		t.Fatalf("matching schema refused: %v", err)
	}
	s = schema(t, `{type: object, properties: {}}`)
	if _, err := walk(s, reflect.TypeFor[bindv1alpha1.LocalObjectReference](), "ref", false); err == nil || !strings.Contains(err.Error(), "ref.name") {
		t.Errorf("a Go field missing from the CRD: err = %v", err)
	}
	s = schema(t, `{type: object, properties: {name: {type: string}, other: {type: string}}}`)
	if _, err := walk(s, reflect.TypeFor[bindv1alpha1.LocalObjectReference](), "ref", false); err == nil || !strings.Contains(err.Error(), "ref.other") {
		t.Errorf("a CRD property missing from the Go type: err = %v", err)
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"a\nb":                         "a b",
		"first.\n\nsecond":             "first.<br><br>second",
		"<cluster>.<ns>.svc":           "&lt;cluster&gt;.&lt;ns&gt;.svc",
		`"*.apps", "_sip._tcp" a|b`:    `"\*.apps", "\_sip.\_tcp" a\|b`,
		"[x]":                          `\[x\]`,
		"  spaced   out\n  lines  ":    "spaced out lines",
		"use `kubectl explain` please": "use \\`kubectl explain\\` please",
	} {
		if got := text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
	if got := code("a|b"); got != "`a\\|b`" {
		t.Errorf("code = %q", got)
	}
}

func TestTypeOf(t *testing.T) {
	cond := reflect.TypeFor[metav1.Condition]()
	s := &apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}
	if got, want := typeOf(s, cond), "[][meta/v1.Condition](https://pkg.go.dev/k8s.io/apimachinery/pkg/apis/meta/v1#Condition)"; got != want {
		t.Errorf("typeOf = %q, want %q", got, want)
	}
	m := &apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}}
	if got := typeOf(m, reflect.TypeFor[string]()); got != "map[string]string" {
		t.Errorf("typeOf map = %q", got)
	}
	if got := defaultOf(&apiextensionsv1.JSONSchemaProps{Default: &apiextensionsv1.JSON{Raw: []byte(`{}`)}}); got != "`{}`" {
		t.Errorf("defaultOf = %q", got)
	}
}

// The reference in the repository is what the generator writes from the
// CRDs in the repository (make verify-generated checks the same).
func TestReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	out := filepath.Join(t.TempDir(), "api.md")
	if err := run(filepath.Join(root, "config", "crd", "bases"), out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, "docs", "reference", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("docs/reference/api.md is stale: run make manifests and commit it")
	}
	// Every kind has its section, twice generated the same.
	for _, k := range []string{"BindACL", "BindCatalogZone", "BindCluster", "BindDNSSECPolicy", "BindPolicy", "BindTSIGKey", "BindView", "BindZone", "DNSRecord"} {
		if !strings.Contains(string(got), "\n## "+k+"\n") || !strings.Contains(string(got), "\n### "+k+" spec\n") {
			t.Errorf("no section for %s", k)
		}
	}
	again := filepath.Join(t.TempDir(), "again.md")
	if err := run(filepath.Join(root, "config", "crd", "bases"), again); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(again); string(b) != string(got) {
		t.Error("two runs wrote different references")
	}
}
