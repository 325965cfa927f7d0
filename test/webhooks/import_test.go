package webhooks

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/importer"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestImportedObjectsAdmitted (issue 46 item 3): what `bind-operator
// import` emits for each server of importer/testdata (an authoritative
// one with views, ACLs, keys, primary and secondary zones; a resolver with
// forward and stub zones and response policies; a hidden primary with a
// catalog zone), and what it converts from the predecessor's
// manifests (--from-manifests), is created through the real API server and webhooks — the
// CRDs' schema and CEL rules, the cross-object checks, the imported keys'
// Secret access check and named-checkconf on the cluster's render — and
// none of it is refused: a refusal is an importer bug.
func TestImportedObjectsAdmitted(t *testing.T) {
	for _, server := range []string{"server", "resolver", "catalog"} {
		t.Run(server, func(t *testing.T) {
			t.Parallel()
			ns := exampleNamespace(t)
			res, err := importer.Import(importer.Options{
				Root:      filepath.Join(testkit.RepoRoot(), "importer", "testdata", server),
				Config:    "/etc/bind/named.conf",
				Namespace: ns,
				Cluster:   "legacy",
			})
			testkit.Must(t, err)
			for _, s := range res.Secrets {
				testkit.Must(t, k8sClient.Create(ctx, s))
			}
			createAll(t, res.Objects)
		})
	}
	// The predecessor's manifests, converted (--from-manifests).
	t.Run("seed manifests", func(t *testing.T) {
		t.Parallel()
		ns := exampleNamespace(t)
		data, err := os.ReadFile(filepath.Join(testkit.RepoRoot(), "importer", "testdata", "seed", "manifests.yaml"))
		testkit.Must(t, err)
		res, err := importer.ConvertManifests("manifests.yaml", data)
		testkit.Must(t, err)
		for _, o := range res.Objects {
			o.SetNamespace(ns)
		}
		createAll(t, res.Objects)
	})
}

func createAll(t *testing.T, objs []client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := k8sClient.Create(ctx, o, client.FieldValidation("Strict")); err != nil {
			t.Errorf("%s %s refused: %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
}
