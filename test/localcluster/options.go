// Package localcluster runs a one-node Kubernetes cluster on this machine
// from real components: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kube-proxy (nftables) and a kubelet with containerd, runc
// and the CNI bridge plugin. Images are imported from docker-archives (no
// registry). Every address it uses is loopback or inside 198.18.0.0/15, on
// a bridge it creates; Stop, or the next Start after a crash, removes
// everything it made and restores what it changed. See README.md.
package localcluster

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// The network. Pods get addresses on the bridge's subnet, Services get
// ClusterIPs from the neighbouring /16; both are inside the benchmarking
// range 198.18.0.0/15 that tests may use (docs/testing.md).
const (
	NodeName   = "localcluster"
	BridgeName = "blc-br0"
	// Cluster-scoped host objects carry this prefix, so a sweep finds them.
	hostPrefix = "bind-localcluster"
)

var (
	NodeIP = netip.MustParseAddr("198.18.0.1")
	// OutsiderIP is a second host address on the bridge, below the pods'
	// range: a client that tests can send from (ExchangeFrom) when they
	// need one that an ACL naming NodeIP does not match.
	OutsiderIP  = netip.MustParseAddr("198.18.0.2")
	PodCIDR     = netip.MustParsePrefix("198.18.0.0/16")
	ServiceCIDR = netip.MustParsePrefix("198.19.0.0/16")
	// APIServerServiceIP is the kubernetes Service's ClusterIP (the first
	// address of the Service range).
	APIServerServiceIP = netip.MustParseAddr("198.19.0.1")
)

// Fixed host paths. The kubelet and containerd use some paths whatever
// they are configured with; the rest are ours, fixed so a crashed run can be
// found by the next.
const (
	statePath     = "/run/bind-operator-localcluster.state"
	lockPath      = "/run/bind-operator-localcluster.lock"
	cgroupRoot    = "/" + hostPrefix
	nftGuardTable = "bind_localcluster"
)

// Options configure Start.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kube-proxy, kubelet and kubectl (default: bin/k8s of
	// the repository, or $KUBEBUILDER_ASSETS).
	BinDir string
	// Images are docker-archives of test images imported into containerd
	// before the kubelet starts (default: bin/images/pause.tar). PauseImage
	// must be among them. Product images are never imported: the node pulls
	// them from the registry.
	Images []string
	// PauseImage is the pods' sandbox image.
	PauseImage string
	// RegistryBin is the distribution registry's binary (default
	// bin/tools/registry of the repository, make tools).
	RegistryBin string
	// RegistryStorage is the folder the registry serves (default
	// bin/registry of the repository, where make images pushes).
	RegistryStorage string
	// RegistryHosts are the registries whose images the node pulls from
	// the local registry (default DefaultRegistryHosts).
	RegistryHosts []string
	// WorkDir holds every file of the cluster (default: a new folder under
	// /var/tmp, removed by Stop unless KeepWorkDir).
	WorkDir     string
	KeepWorkDir bool
	// LockWait bounds the wait for another local cluster on this machine
	// to stop (one runs at a time; default 10 minutes).
	LockWait time.Duration
	// HostLock, when set, is the machine-wide lock the caller already
	// holds (LockHost); Start uses it and Stop leaves it held.
	HostLock *HostLock
	// Logf receives progress lines (default: none).
	Logf func(format string, args ...any)
	// APIServerProfiling serves the API server's /debug/pprof to its
	// admin, for a benchmark to see where the API server's CPU goes. Off
	// by default, as on a hardened control plane.
	APIServerProfiling bool
}

// DefaultPauseImage is the sandbox image hack/build-images.sh builds.
const DefaultPauseImage = "localhost/bind-localcluster/pause:1"

// DefaultPauseArchive is where hack/build-images.sh saves DefaultPauseImage.
func DefaultPauseArchive() string { return filepath.Join(RepoRoot(), "bin", "images", "pause.tar") }

// DefaultRegistryBin is the registry make tools builds.
func DefaultRegistryBin() string { return filepath.Join(RepoRoot(), "bin", "tools", "registry") }

// RepoRoot is the repository's top folder (found from this source file).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func (o *Options) defaults() error {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.PauseImage == "" {
		o.PauseImage = DefaultPauseImage
	}
	if o.BinDir == "" {
		o.BinDir = filepath.Join(RepoRoot(), "bin", "k8s")
		if env := os.Getenv("KUBEBUILDER_ASSETS"); env != "" {
			o.BinDir = env
		}
	}
	if o.Images == nil {
		o.Images = []string{DefaultPauseArchive()}
	}
	if o.RegistryStorage == "" {
		o.RegistryStorage = filepath.Join(RepoRoot(), "bin", "registry")
	}
	if len(o.RegistryHosts) == 0 {
		o.RegistryHosts = DefaultRegistryHosts
	}
	if o.WorkDir == "" {
		dir, err := os.MkdirTemp("/var/tmp", hostPrefix+"-")
		if err != nil {
			return err
		}
		o.WorkDir = dir
	} else if err := os.MkdirAll(o.WorkDir, 0o700); err != nil {
		return err
	}
	abs, err := filepath.Abs(o.WorkDir)
	if err != nil {
		return err
	}
	o.WorkDir = abs
	return nil
}

func (o *Options) bin(name string) string { return filepath.Join(o.BinDir, name) }

func (o *Options) path(elem ...string) string {
	return filepath.Join(append([]string{o.WorkDir}, elem...)...)
}

// errorf prefixes the package name, so a failure in a test log says where
// it came from.
func errorf(format string, args ...any) error {
	return fmt.Errorf("localcluster: "+format, args...)
}
