package webhooks

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// The example folders hold manifests as users write them, applied through
// the real webhooks (test/cel/testdata holds the CRD-only ones). Each file
// is applied in a namespace of its own, its objects in order.
//
//   - testdata/valid: every object must be admitted.
//   - testdata/invalid: every object but the last must be admitted (they
//     set the scene, e.g. the DNSRecord a CNAME collides with); the last
//     must be refused, and the refusal must contain every "# want:" line
//     (the field path, the sentence) and none of the "# not:" lines (e.g.
//     a derived field that must not be blamed).

var exampleNS atomic.Int32

func exampleNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("ex-%d", exampleNS.Add(1))
	testkit.Must(t, k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	return name
}

func exampleLines(t *testing.T, path, prefix string) []string {
	t.Helper()
	f, err := os.Open(path)
	testkit.Must(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if w, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			out = append(out, w)
		}
	}
	return out
}

func exampleFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in testdata/%s: %v", dir, err)
	}
	return files
}

func TestValidExamplesAdmitted(t *testing.T) {
	for _, f := range exampleFiles(t, "valid") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			ns := exampleNamespace(t)
			for _, obj := range testkit.ReadObjects(t, f) {
				obj.SetNamespace(ns)
				if err := k8sClient.Create(ctx, obj); err != nil {
					t.Fatalf("%s %q refused: %v", obj.GetKind(), obj.GetName(), err)
				}
			}
		})
	}
}

func TestInvalidExamplesRefused(t *testing.T) {
	for _, f := range exampleFiles(t, "invalid") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			want, not := exampleLines(t, f, "# want: "), exampleLines(t, f, "# not: ")
			if len(want) == 0 {
				t.Fatalf("%s has no '# want:' line saying what the refusal must contain", f)
			}
			objs := testkit.ReadObjects(t, f)
			ns := exampleNamespace(t)
			for _, obj := range objs {
				obj.SetNamespace(ns)
			}
			for _, obj := range objs[:len(objs)-1] {
				if err := k8sClient.Create(ctx, obj); err != nil {
					t.Fatalf("scene: %s %q refused: %v", obj.GetKind(), obj.GetName(), err)
				}
			}
			last := objs[len(objs)-1]
			// Rules over other objects read the webhook's cache, which
			// may lag the scene by a moment: dry-run until it is refused.
			var err error
			_ = testkit.Await(10*time.Second, 100*time.Millisecond, func(g Gomega) {
				err = k8sClient.Create(ctx, last.DeepCopy(), client.DryRunAll)
				g.Expect(err).To(HaveOccurred())
			})
			err = k8sClient.Create(ctx, last)
			if err == nil {
				t.Fatalf("%s %q admitted; want a refusal containing %q", last.GetKind(), last.GetName(), want)
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal lacks %q:\n%v", w, err)
				}
			}
			for _, n := range not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("refusal mentions %q, which is not at fault:\n%v", n, err)
				}
			}
		})
	}
}
