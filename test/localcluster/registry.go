package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The node pulls the product images (the operator's and the BIND image)
// by tag from a real OCI registry, as a user's node pulls a release: the
// CNCF distribution registry, serving the folder that `make images` and
// `make release` push to (hack/build-images.sh). containerd sends every
// pull for one of Options.RegistryHosts (git.unkin.net by default) to it,
// so the released manifests run unchanged. It listens on the node's bridge
// address, which is this cluster's own: no port of the host is taken.
const registryPort = 5000

// RegistryAddr is host:port of the local cluster's registry (plain HTTP),
// reachable from the host while the cluster runs: push there with
// PUSH_REGISTRY=<RegistryAddr> hack/build-images.sh.
var RegistryAddr = fmt.Sprintf("%s:%d", NodeIP, registryPort)

// DefaultRegistryHosts are the registries whose images the node pulls from
// the local registry: the one the release's images name.
var DefaultRegistryHosts = []string{"git.unkin.net"}

// startRegistry runs the registry on the bridge and waits until it serves
// /v2/.
func (c *Cluster) startRegistry(ctx context.Context) error {
	if err := os.MkdirAll(c.opts.RegistryStorage, 0o755); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
http:
  addr: %s
`, c.opts.RegistryStorage, RegistryAddr)
	if err := os.WriteFile(c.opts.path("registry.yml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	d, err := c.startDaemon("registry", c.opts.RegistryBin, "serve", c.opts.path("registry.yml"))
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	return c.waitUntil(ctx, "the registry at http://"+RegistryAddr+"/v2/", 30*time.Second, func() (bool, error) {
		resp, err := hc.Get("http://" + RegistryAddr + "/v2/")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("HTTP %d", resp.StatusCode)
	}, d)
}

// writeRegistryHosts points containerd's pulls for each registry host at
// the local registry (certs.d/<host>/hosts.toml). The registry is the
// host's only server: an image it lacks fails to pull at once instead of
// reaching for the internet.
func (c *Cluster) writeRegistryHosts() error {
	for _, host := range c.opts.RegistryHosts {
		if host == "" || strings.ContainsAny(host, "/ ") {
			return errorf("registry host %q is not a host[:port]", host)
		}
		dir := c.opts.path("containerd", "certs.d", host)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		toml := fmt.Sprintf("server = \"http://%[1]s\"\n\n[host.\"http://%[1]s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", RegistryAddr)
		if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(toml), 0o644); err != nil {
			return err
		}
	}
	return nil
}
