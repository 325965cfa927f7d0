package webhooks

import (
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestDocsExamplesAdmitted creates the examples of the user docs
// (docs/getting-started.md, docs/guides) as a reader would apply them:
// each file's ```yaml objects in order, in a namespace of their own,
// through the real webhooks, with unknown fields refused (docs'
// TestExamplesDecodeStrictly checks the same without an API server).
func TestDocsExamplesAdmitted(t *testing.T) {
	docs := filepath.Join(testkit.RepoRoot(), "docs")
	guides, err := filepath.Glob(filepath.Join(docs, "guides", "*.md"))
	testkit.Must(t, err)
	for _, f := range append([]string{filepath.Join(docs, "getting-started.md")}, guides...) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			ns := exampleNamespace(t)
			n := 0
			for _, d := range testkit.MarkdownYAML(t, f) {
				obj := &unstructured.Unstructured{}
				if err := yaml.Unmarshal(d.YAML, &obj.Object); err != nil {
					t.Fatalf("%s:%d: %v", f, d.Line, err)
				}
				if len(obj.Object) == 0 {
					continue
				}
				obj.SetNamespace(ns)
				if err := k8sClient.Create(ctx, obj, client.FieldValidation("Strict")); err != nil {
					t.Errorf("%s:%d: %s %q refused: %v", f, d.Line, obj.GetKind(), obj.GetName(), err)
				}
				n++
			}
			if n == 0 {
				t.Errorf("%s has no example", f)
			}
		})
	}
}
