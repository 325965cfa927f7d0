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

// MarkdownYAML returns the documents of every ```yaml block of a Markdown
// file, in order, each with the line its block starts on. Only a fence
// whose info string is exactly "yaml" counts: the docs mark fragments that
// are not whole objects otherwise (e.g. ```yaml fragment).
func MarkdownYAML(tb testing.TB, path string) []MarkdownDoc {
	tb.Helper()
	raw, err := os.ReadFile(path)
	Must(tb, err)
	var out []MarkdownDoc
	var block []string
	start, in := 0, false
	for i, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```yaml":
			in, start, block = true, i+2, nil
		case in && trimmed == "```":
			in = false
			for _, d := range SplitYAML([]byte(strings.Join(block, "\n"))) {
				out = append(out, MarkdownDoc{Line: start, YAML: d})
			}
		case in:
			block = append(block, line)
		}
	}
	if in {
		tb.Fatalf("%s: the yaml block at line %d is not closed", path, start-1)
	}
	return out
}

// MarkdownDoc is one YAML document of a Markdown file.
type MarkdownDoc struct {
	// Line is where its block's first line is, 1-based.
	Line int
	YAML []byte
}
