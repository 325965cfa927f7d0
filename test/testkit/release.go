package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// The images a test run installs are the checkout's own release: its
// version is $VERSION (the Makefile exports the one it built with) or what
// hack/version.sh says, and its images are those hack/build-images.sh
// built and pushed for that version.

// DefaultRegistry is the registry path the release's images are named
// under unless $REGISTRY says otherwise.
const DefaultRegistry = "git.unkin.net/unkin"

var version = sync.OnceValue(func() string {
	if v := strings.TrimSpace(os.Getenv("VERSION")); v != "" {
		return v
	}
	out, err := exec.Command(filepath.Join(RepoRoot(), "hack", "version.sh")).Output()
	if err != nil {
		return "v0.0.0-dev"
	}
	return strings.TrimSpace(string(out))
})

// Version is the version of the checkout's release.
func Version() string { return version() }

// Registry is the registry path the release's images are named under.
func Registry() string {
	if r := strings.TrimSpace(os.Getenv("REGISTRY")); r != "" {
		return r
	}
	return DefaultRegistry
}

// OperatorImage is the release's operator (and agent) image at version v.
func OperatorImage(v string) string { return Registry() + "/bind-operator:" + v }

// BindImage is the release's BIND image at version v.
func BindImage(v string) string { return Registry() + "/bind-operator-bind9:" + v }
