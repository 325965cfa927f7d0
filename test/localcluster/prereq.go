package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrPrerequisites wraps every "this machine lacks X" error, so a test can
// tell a missing tool from a failure.
var ErrPrerequisites = errors.New("localcluster prerequisites")

// checkPrerequisites names every missing piece and the command that
// provides it.
func checkPrerequisites(o *Options) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (network, cgroups and containers need it)")
	}
	for cmd, pkg := range map[string]string{
		"ip": "iproute2", "nft": "nftables", "containerd": "containerd", "ctr": "containerd", "runc": "runc",
	} {
		if _, err := exec.LookPath(cmd); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s: make deps)", cmd, pkg))
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join("/usr/lib/cni", plugin)); err != nil {
			missing = append(missing, fmt.Sprintf("CNI plugin %s (Debian package containernetworking-plugins: make deps)", plugin))
		}
	}
	bin := o.BinDir
	if bin == "" {
		bin = filepath.Join(RepoRoot(), "bin", "k8s")
		if env := os.Getenv("KUBEBUILDER_ASSETS"); env != "" {
			bin = env
		}
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet", "kubectl"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			missing = append(missing, fmt.Sprintf("%s in %s (hack/build-k8s-binaries.sh %s)", b, bin, bin))
		}
	}
	reg := o.RegistryBin
	if reg == "" {
		reg = DefaultRegistryBin()
		o.RegistryBin = reg
	}
	if _, err := os.Stat(reg); err != nil {
		missing = append(missing, fmt.Sprintf("the distribution registry %s (make tools: hack/build-tools.sh bin/tools registry)", reg))
	}
	images := o.Images
	if images == nil {
		images = []string{DefaultPauseArchive()}
	}
	for _, img := range images {
		if _, err := os.Stat(img); err != nil {
			missing = append(missing, fmt.Sprintf("image archive %s (make images)", img))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", ErrPrerequisites, strings.Join(missing, "; "))
	}
	return nil
}
