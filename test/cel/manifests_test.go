package cel

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"git.unkin.net/unkin/bind-operator/test/envtestutil"
)

// readObjects decodes every YAML document of a file.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	if len(objs) == 0 {
		t.Fatalf("%s holds no object", path)
	}
	return objs
}

// TestSamplesAccepted creates every object of config/samples: what the
// README tells users to apply must pass the API server's own validation.
func TestSamplesAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(envtestutil.RepoRoot(), "config", "samples", "bind_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	ns := newNamespace(t)
	kinds := map[string]bool{}
	for _, f := range files {
		for _, obj := range readObjects(t, f) {
			obj.SetNamespace(ns)
			if err := k8sClient.Create(ctx, obj); err != nil {
				t.Errorf("%s: %s %q rejected: %v", filepath.Base(f), obj.GetKind(), obj.GetName(), err)
			}
			kinds[obj.GetKind()] = true
		}
	}
	if len(kinds) != 9 {
		t.Errorf("the samples should show all nine kinds, found %d: %v", len(kinds), kinds)
	}
}

// TestInvalidExamplesRejected creates every file of testdata/invalid. Each
// file states what the rejection must say in "# want:" comment lines.
func TestInvalidExamplesRejected(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid examples found: %v", err)
	}
	ns := newNamespace(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := wantComments(t, f)
			if len(want) == 0 {
				t.Fatalf("%s has no '# want:' line saying what the rejection must contain", f)
			}
			objs := readObjects(t, f)
			if len(objs) != 1 {
				t.Fatalf("%s must hold exactly one object, holds %d", f, len(objs))
			}
			obj := objs[0]
			obj.SetNamespace(ns)
			err := k8sClient.Create(ctx, obj)
			if err == nil {
				_ = k8sClient.Delete(ctx, obj)
			}
			checkErr(t, err, want)
		})
	}
}

func wantComments(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if w, ok := strings.CutPrefix(sc.Text(), "# want: "); ok {
			want = append(want, w)
		}
	}
	return want
}
