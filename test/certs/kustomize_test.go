package certs

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// sigs.k8s.io/kustomize/api is not in this module's graph, so these tests do
// not run kustomize. They read the kustomization files and the manifests
// directly, apply the few transformations the tests rely on (namespace,
// namePrefix, the replacements and name references declared in the files)
// and check the pieces fit together.

// kustomization is the subset of kustomize's schema the install uses.
type kustomization struct {
	Namespace      string   `json:"namespace"`
	NamePrefix     string   `json:"namePrefix"`
	Resources      []string `json:"resources"`
	Configurations []string `json:"configurations"`
	Patches        []struct {
		Path   string            `json:"path"`
		Target map[string]string `json:"target"`
	} `json:"patches"`
	Replacements []replacement `json:"replacements"`
	Images       []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

type replacement struct {
	Source struct {
		selector
		FieldPath string `json:"fieldPath"`
	} `json:"source"`
	Targets []struct {
		Select     selector `json:"select"`
		FieldPaths []string `json:"fieldPaths"`
		Options    struct {
			Delimiter string `json:"delimiter"`
			Index     int    `json:"index"`
			Create    bool   `json:"create"`
		} `json:"options"`
	} `json:"targets"`
}

type selector struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
}

func configDir(parts ...string) string {
	return filepath.Join(append([]string{testkit.RepoRoot(), "config"}, parts...)...)
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	testkit.Must(t, err)
	var k kustomization
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	return k
}

// objectsOf reads the resources of a kustomization folder, without
// descending into other kustomizations.
func objectsOf(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, r := range readKustomization(t, dir).Resources {
		out = append(out, testkit.ReadObjects(t, filepath.Join(dir, r))...)
	}
	return out
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	testkit.Must(t, err)
	return b
}

func yamlUnmarshal(b []byte, v any) error { return yaml.Unmarshal(b, v) }
