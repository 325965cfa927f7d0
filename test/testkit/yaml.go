package testkit

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ReadObjects parses every document of a manifest file.
func ReadObjects(tb testing.TB, path string) []*unstructured.Unstructured {
	tb.Helper()
	raw, err := os.ReadFile(path)
	Must(tb, err)
	var out []*unstructured.Unstructured
	for _, doc := range SplitYAML(raw) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// SplitYAML splits a multi-document stream and drops empty documents.
func SplitYAML(raw []byte) [][]byte {
	var docs [][]byte
	for _, d := range strings.Split("\n"+string(raw), "\n---") {
		if strings.TrimSpace(d) == "" {
			continue
		}
		docs = append(docs, []byte(d))
	}
	return docs
}
