package cel

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestEveryFieldDocumented walks every generated CRD schema: `kubectl
// explain` must have a description for every field of every kind.
func TestEveryFieldDocumented(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != 9 {
		t.Fatalf("expected nine CRDs, found %d (%v)", len(files), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !slices.Contains(crd.Spec.Names.Categories, "bind") {
			t.Errorf("%s: not in the bind category, so `kubectl get bind` would miss it", crd.Name)
		}
		if len(crd.Spec.Names.ShortNames) == 0 {
			t.Errorf("%s: has no short name", crd.Name)
		}
		for _, v := range crd.Spec.Versions {
			if v.Subresources == nil || v.Subresources.Status == nil {
				t.Errorf("%s: no status subresource", crd.Name)
			}
			if len(v.AdditionalPrinterColumns) < 2 {
				t.Errorf("%s: needs printer columns", crd.Name)
			}
			var missing []string
			walk(v.Schema.OpenAPIV3Schema, crd.Spec.Names.Kind, &missing)
			sort.Strings(missing)
			for _, m := range missing {
				t.Errorf("%s: field %s has no description", crd.Name, m)
			}
		}
	}
}

// walk records the properties below s that have no description. The
// top-level metadata is ObjectMeta, documented by Kubernetes itself.
func walk(s *apiextensionsv1.JSONSchemaProps, path string, missing *[]string) {
	if s == nil {
		return
	}
	for name, prop := range s.Properties {
		p := path + "." + name
		if prop.Description == "" && !(name == "metadata" && !strings.Contains(path, ".")) {
			*missing = append(*missing, p)
		}
		walk(&prop, p, missing)
	}
	if s.Items != nil {
		walk(s.Items.Schema, path+"[]", missing)
	}
	if s.AdditionalProperties != nil {
		walk(s.AdditionalProperties.Schema, path+"{}", missing)
	}
}
