// Package docs holds the user documentation; its test checks the examples
// in it. test/webhooks TestDocsExamplesAdmitted also creates them through
// the API server and the real webhooks.
package docs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// files are the documents whose ```yaml blocks must be whole objects of
// the API.
func files(tb testing.TB, dir string) []string {
	tb.Helper()
	guides, err := filepath.Glob(filepath.Join(dir, "guides", "*.md"))
	testkit.Must(tb, err)
	return append([]string{filepath.Join(dir, "getting-started.md")}, guides...)
}

// TestExamplesDecodeStrictly decodes every example into its Go type with
// unknown and duplicate fields refused, so a field a doc shows is a field
// of the CRD.
func TestExamplesDecodeStrictly(t *testing.T) {
	scheme := runtime.NewScheme()
	testkit.Must(t, bindv1alpha1.AddToScheme(scheme))
	for _, f := range files(t, ".") {
		t.Run(f, func(t *testing.T) {
			docs := testkit.MarkdownYAML(t, f)
			if len(docs) == 0 {
				t.Fatal("no ```yaml example")
			}
			for _, d := range docs {
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal(d.YAML, &u.Object); err != nil {
					t.Errorf("%s:%d: %v", f, d.Line, err)
					continue
				}
				if len(u.Object) == 0 {
					continue
				}
				gvk := u.GroupVersionKind()
				if gvk.GroupVersion() != bindv1alpha1.GroupVersion {
					t.Errorf("%s:%d: %s is not of %s; mark a fragment ```yaml fragment", f, d.Line, gvk, bindv1alpha1.GroupVersion)
					continue
				}
				obj, err := scheme.New(gvk)
				if err != nil {
					t.Errorf("%s:%d: %v", f, d.Line, err)
					continue
				}
				if err := yaml.UnmarshalStrict(d.YAML, obj); err != nil {
					t.Errorf("%s:%d: %s %q: %v", f, d.Line, gvk.Kind, u.GetName(), err)
				}
				if u.GetName() == "" {
					t.Errorf("%s:%d: %s without metadata.name", f, d.Line, gvk.Kind)
				}
			}
		})
	}
}

// TestEveryKindHasAGuide: one guide per kind, named after it, with an
// example of that kind and a link to its API reference.
func TestEveryKindHasAGuide(t *testing.T) {
	scheme := runtime.NewScheme()
	testkit.Must(t, bindv1alpha1.AddToScheme(scheme))
	apiPkg := reflect.TypeFor[bindv1alpha1.BindCluster]().PkgPath()
	kinds := 0
	for kind, typ := range scheme.KnownTypes(bindv1alpha1.GroupVersion) {
		if typ.PkgPath() != apiPkg || strings.HasSuffix(kind, "List") {
			continue // the List kinds, and meta/v1's options registered with every group
		}
		kinds++
		f := filepath.Join("guides", strings.ToLower(kind)+".md")
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("%s has no guide: %v", kind, err)
			continue
		}
		if !strings.Contains(string(raw), "../reference/api.md#"+strings.ToLower(kind)) {
			t.Errorf("%s does not link the API reference of %s (../reference/api.md#%s)", f, kind, strings.ToLower(kind))
		}
		found := false
		for _, d := range testkit.MarkdownYAML(t, f) {
			var u unstructured.Unstructured
			if yaml.Unmarshal(d.YAML, &u.Object) == nil && u.GetKind() == kind {
				found = true
			}
		}
		if !found {
			t.Errorf("%s has no example of a %s", f, kind)
		}
	}
	if kinds != 9 {
		t.Errorf("found %d kinds, want the nine of the API", kinds)
	}
}
