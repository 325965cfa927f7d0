package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// HostSnapshot is what a cluster could leave behind on the host: taken
// before Start and after Stop, the two must be equal.
type HostSnapshot struct {
	Links     []string
	NftTables []string
	Mounts    []string
	Processes []string
	Cgroups   []string
	Sysctls   []string
	Paths     []string
}

// componentNames are the executables a cluster runs on the host or in
// its containers.
var componentNames = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
	"kube-proxy", "kubelet", "containerd", "containerd-shim-runc-v2", "runc", "pause", "named", "bind-operator"}

// TakeHostSnapshot reads the host's state.
func TakeHostSnapshot(ctx context.Context) HostSnapshot {
	var s HostSnapshot
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			s.Links = append(s.Links, i.Name)
		}
	}
	s.NftTables, _ = nftTables(ctx)
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 4 {
				s.Mounts = append(s.Mounts, unescapeMount(f[4]))
			}
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		for _, c := range componentNames {
			// comm is cut at 15 bytes.
			if name == c || (len(name) == 15 && strings.HasPrefix(c, name)) {
				s.Processes = append(s.Processes, e.Name()+" "+name)
			}
		}
	}
	s.Cgroups = cgroupDirs()
	for _, name := range hostSysctls {
		if v, ok := readSysctl(name); ok {
			s.Sysctls = append(s.Sysctls, name+"="+v)
		}
	}
	for _, p := range append(append([]string{}, fixedPaths...), statePath) {
		if _, err := os.Lstat(p); err == nil {
			s.Paths = append(s.Paths, p)
		}
	}
	return s
}

// Added lists what after has that before had not, and sysctls whose value
// changed, one line each.
func (before HostSnapshot) Added(after HostSnapshot) []string {
	var out []string
	diff := func(kind string, a, b []string) {
		had := map[string]bool{}
		for _, x := range a {
			had[x] = true
		}
		for _, x := range b {
			if !had[x] {
				out = append(out, fmt.Sprintf("%s: %s", kind, x))
			}
		}
	}
	diff("link", before.Links, after.Links)
	diff("nftables table", before.NftTables, after.NftTables)
	diff("mount", before.Mounts, after.Mounts)
	diff("process", before.Processes, after.Processes)
	diff("cgroup", before.Cgroups, after.Cgroups)
	diff("sysctl", before.Sysctls, after.Sysctls)
	diff("path", before.Paths, after.Paths)
	sort.Strings(out)
	return out
}
