package cel

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestSamplesAccepted creates every object of config/samples: what the
// README tells users to apply must pass the API server's own validation.
func TestSamplesAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.RepoRoot(), "config", "samples", "bind_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	ns := newNamespace(t)
	kinds := map[string]bool{}
	for _, f := range files {
		objs := testkit.ReadObjects(t, f)
		if len(objs) == 0 {
			t.Errorf("%s holds no object", filepath.Base(f))
		}
		for _, obj := range objs {
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
			objs := testkit.ReadObjects(t, f)
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
