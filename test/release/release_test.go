// Package release tests what `make release` produces, as a user receives
// it: the version a binary reports and the images it defaults to, the
// install files hack/release.sh renders, and the image build's refusal to
// wait on a registry that does not answer. The chart is test/chart's.
package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

const (
	testVersion  = "v9.8.7"
	testRegistry = "registry.example/team"
	versionPkg   = "git.unkin.net/unkin/bind-operator/internal/version"
)

// semver is a release version with its leading v: SemVer 2, so it tags the
// images and (without the v) versions the chart.
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?$`)

func run(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = testkit.RepoRoot()
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestVersionOfACheckout: hack/version.sh names an untagged checkout with a
// version that is valid SemVer, so every artifact can carry it.
func TestVersionOfACheckout(t *testing.T) {
	out, err := run(t, nil, filepath.Join("hack", "version.sh"))
	if err != nil {
		t.Fatalf("hack/version.sh: %v\n%s", err, out)
	}
	v := strings.TrimSpace(out)
	if !semver.MatchString(v) {
		t.Errorf("hack/version.sh printed %q, not a SemVer version with a leading v", v)
	}
	if strings.Contains(v, "latest") {
		t.Errorf("hack/version.sh printed %q", v)
	}
}

// TestBinaryReportsItsRelease: a binary stamped as a release reports it
// (`bind-operator version`) and defaults both of its images to that
// release's, under the registry it was built for.
func TestBinaryReportsItsRelease(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bind-operator")
	ldflags := fmt.Sprintf("-X %[1]s.version=%[2]s -X %[1]s.commit=0123456789ab -X %[1]s.repository=%[3]s", versionPkg, testVersion, testRegistry)
	if out, err := run(t, []string{"CGO_ENABLED=0"}, "go", "build", "-ldflags", ldflags, "-o", bin, "./cmd"); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := run(t, nil, bin, "version")
	if err != nil {
		t.Fatalf("bind-operator version: %v\n%s", err, out)
	}
	if !strings.Contains(out, testVersion) || !strings.Contains(out, "0123456789ab") {
		t.Errorf("bind-operator version printed %q, want the version %s and the commit", out, testVersion)
	}
	help, _ := run(t, nil, bin, "manager", "--help")
	for _, want := range []string{testRegistry + "/bind-operator:" + testVersion, testRegistry + "/bind-operator-bind9:" + testVersion} {
		if !strings.Contains(help, want) {
			t.Errorf("manager --help does not name the default image %s:\n%s", want, help)
		}
	}
	if strings.Contains(help, ":latest") {
		t.Errorf("manager --help names a :latest image:\n%s", help)
	}
}

// TestInstallFiles: hack/release.sh renders the CRDs on their own and two
// install files without them, each naming only the release's images, with
// the agent and BIND images written out and the version on every object.
func TestInstallFiles(t *testing.T) {
	dir := t.TempDir()
	out, err := run(t, []string{"REGISTRY=" + testRegistry, "KUBECTL=" + kubectl(t)}, filepath.Join("hack", "release.sh"), "manifests", testVersion, dir)
	if err != nil {
		t.Fatalf("hack/release.sh manifests: %v\n%s", err, out)
	}
	crds := readObjects(t, filepath.Join(dir, "crds.yaml"))
	if len(crds) != 9 {
		t.Errorf("crds.yaml holds %d objects, want the 9 CRDs", len(crds))
	}
	for _, o := range crds {
		if o.GetKind() != "CustomResourceDefinition" || !strings.HasSuffix(o.GetName(), ".bind.unkin.net") {
			t.Errorf("crds.yaml holds %s %s, want only the API's CRDs", o.GetKind(), o.GetName())
		}
	}
	operator := testRegistry + "/bind-operator:" + testVersion
	bind := testRegistry + "/bind-operator-bind9:" + testVersion
	for _, file := range []string{"install.yaml", "install-cert-manager.yaml"} {
		objs := readObjects(t, filepath.Join(dir, file))
		checkOwnedObjectsPolicy(t, file, objs)
		var deployments int
		for _, o := range objs {
			what := fmt.Sprintf("%s: %s %s", file, o.GetKind(), o.GetName())
			if o.GetKind() == "CustomResourceDefinition" {
				t.Errorf("%s: the CRDs belong in crds.yaml only: deleting the install must not delete every zone", what)
			}
			if o.GetKind() != "Namespace" && o.GetLabels()["app.kubernetes.io/version"] != testVersion {
				t.Errorf("%s: label app.kubernetes.io/version is %q, want %s", what, o.GetLabels()["app.kubernetes.io/version"], testVersion)
			}
			if o.GetKind() != "Deployment" {
				continue
			}
			deployments++
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				c := c.(map[string]any)
				if c["image"] != operator {
					t.Errorf("%s: container %v runs %v, want %s", what, c["name"], c["image"], operator)
				}
				args := fmt.Sprint(c["args"])
				for _, want := range []string{"--agent-image=" + operator, "--bind-image=" + bind} {
					if !strings.Contains(args, want) {
						t.Errorf("%s: container %v lacks %s in %s", what, c["name"], want, args)
					}
				}
			}
		}
		if deployments != 1 {
			t.Errorf("%s: %d Deployments, want the operator's", file, deployments)
		}
		raw, err := os.ReadFile(filepath.Join(dir, file))
		testkit.Must(t, err)
		if bytes.Contains(raw, []byte(":latest")) || bytes.Contains(raw, []byte("v0.0.0-dev")) {
			t.Errorf("%s names :latest or the development version", file)
		}
	}

	// A digest is kept as one.
	digest := testRegistry + "/bind-operator@sha256:" + strings.Repeat("ab", 32)
	out, err = run(t, []string{"IMG=" + digest, "KUBECTL=" + kubectl(t)}, filepath.Join("hack", "release.sh"), "manifests", testVersion, dir)
	if err != nil {
		t.Fatalf("hack/release.sh manifests with IMG=%s: %v\n%s", digest, err, out)
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, "install.yaml")); !bytes.Contains(raw, []byte("image: "+digest)) {
		t.Errorf("install.yaml with IMG=%s does not run that digest", digest)
	}
	// A version that is not a release version, or an image without a
	// tag, is refused with a sentence.
	for _, c := range []struct {
		env  []string
		ver  string
		want string
	}{
		{nil, "latest", "not a release version"},
		{[]string{"IMG=registry.example/bind-operator"}, testVersion, "names no tag or digest"},
	} {
		out, err := run(t, append(c.env, "KUBECTL="+kubectl(t)), filepath.Join("hack", "release.sh"), "manifests", c.ver, dir)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("release.sh manifests %s %v: err %v, output %q, want a refusal saying %q", c.ver, c.env, err, out, c.want)
		}
	}
}

// TestRegistryDownFailsFast: an image build told to push to a registry that
// does not answer fails within seconds, naming its address, before it
// spends minutes building.
func TestRegistryDownFailsFast(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("hack/build-images.sh runs buildah with chroot isolation: it needs root, as make test has")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	testkit.Must(t, err)
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	began := time.Now()
	out, err := run(t, []string{"PUSH_REGISTRY=" + addr}, filepath.Join("hack", "build-images.sh"), t.TempDir(), "bind9")
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("build-images.sh with PUSH_REGISTRY=%s: %v (want a failure)\n%s", addr, err, out)
	}
	if !strings.Contains(out, "http://"+addr+"/v2/") {
		t.Errorf("the failure does not name the registry's address %s:\n%s", addr, out)
	}
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("the failure took %s", d)
	}
}

// checkOwnedObjectsPolicy: the install holds the admission policy that
// confines the operator's writes, and it names the ServiceAccount the
// operator's Deployment runs as, in the install's namespace.
func checkOwnedObjectsPolicy(t *testing.T, file string, objs []*unstructured.Unstructured) {
	t.Helper()
	var sa, expr string
	var bound bool
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			name, _, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName")
			sa = "system:serviceaccount:" + o.GetNamespace() + ":" + name
		case "ValidatingAdmissionPolicy":
			conds, _, _ := unstructured.NestedSlice(o.Object, "spec", "matchConditions")
			if len(conds) == 1 {
				expr, _ = conds[0].(map[string]any)["expression"].(string)
			}
		case "ValidatingAdmissionPolicyBinding":
			actions, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "validationActions")
			bound = fmt.Sprint(actions) == "[Deny]"
		}
	}
	if want := "request.userInfo.username == '" + sa + "'"; expr != want {
		t.Errorf("%s: the owned-objects policy matches %q, want %q (the operator's ServiceAccount)", file, expr, want)
	}
	if !bound {
		t.Errorf("%s: the owned-objects policy has no binding that denies", file)
	}
}

func kubectl(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	k := filepath.Join(testkit.RepoRoot(), "bin", "k8s", "kubectl")
	if _, err := os.Stat(k); err != nil {
		t.Fatalf("kubectl renders the install files and is missing at %s: run make envtest", k)
	}
	return k
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	testkit.Must(t, err)
	var out []*unstructured.Unstructured
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out
}
