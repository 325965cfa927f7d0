package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// knownNftTables are the tables this cluster's components create, removed
// even when a torn journal lost the list of tables that existed before.
var knownNftTables = []string{"inet " + nftGuardTable, "ip kube-proxy", "ip6 kube-proxy", "ip kubelet", "ip6 kubelet"}

// sweep undoes what the journal s says a cluster did to the host, in the
// order that works: processes (journaled ones, containerd's shims, anything
// left in the cluster's cgroups: the pods' and the components'
// system.slice), mounts, the bridge, nftables tables, cgroups,
// sysctls, then files. It is safe to run twice and after a crash. It
// returns what it could not undo.
func sweep(ctx context.Context, s *state) []string {
	var problems []string
	note := func(format string, err error) {
		if err != nil {
			problems = append(problems, strings.ReplaceAll(format, "%v", err.Error()))
		}
	}
	// Newest first: the kubelet before containerd, the API server before etcd.
	for i := len(s.Processes) - 1; i >= 0; i-- {
		killJournaled(s.Processes[i])
	}
	if s.WorkDir != "" {
		for _, pid := range pidsMentioning(s.WorkDir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	killCgroupProcesses()
	// Mounts under the fixed paths are ours only where the run created the
	// folder: on a host whose own containerd (Docker's, say) or kubelet
	// uses /run/containerd or /var/lib/kubelet, their mounts are theirs and
	// stay.
	prefixes := []string{s.WorkDir}
	for _, p := range s.Paths {
		switch p {
		case "/run/containerd", "/var/lib/kubelet":
			prefixes = append(prefixes, p+"/")
		case "/run/netns":
			prefixes = append(prefixes, p+"/cni-")
		}
	}
	unmountUnder(prefixes...)
	if _, err := os.Stat("/sys/class/net/" + BridgeName); err == nil {
		_, err := run(ctx, "ip", "link", "del", BridgeName)
		note("delete bridge: %v", err)
	}
	if tables, err := nftTables(ctx); err == nil {
		before := map[string]bool{}
		for _, t := range s.NftTables {
			before[t] = true
		}
		for _, t := range tables {
			if before[t] {
				continue
			}
			if s.NftTables == nil && !slices.Contains(knownNftTables, t) {
				continue
			}
			_, err := run(ctx, "nft", append([]string{"delete", "table"}, strings.Fields(t)...)...)
			note("nftables: %v", err)
		}
	}
	note("cgroups: %v", removeCgroups())
	for name, v := range s.Sysctls {
		if cur, ok := readSysctl(name); ok && cur != v {
			note("restore sysctl: %v", writeSysctl(name, v))
		}
	}
	for _, p := range s.Paths {
		note("remove: %v", os.RemoveAll(p))
	}
	if s.WorkDir != "" && !s.KeepWorkDir {
		note("remove work folder: %v", os.RemoveAll(s.WorkDir))
	}
	note("remove journal: %v", ignoreNotExist(os.Remove(statePath)))
	return problems
}

// pidsMentioning lists processes whose command line names dir: containerd's
// shims (started with the socket's -address) daemonise and escape
// Pdeathsig.
func pidsMentioning(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), dir+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cgroupDirs lists the cgroup folders under the cluster's root in every
// hierarchy, deepest first.
func cgroupDirs() []string {
	hierarchies, _ := cgroupHierarchies()
	var dirs []string
	for _, h := range hierarchies {
		root := filepath.Join(h, cgroupRoot)
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	return dirs
}

// killCgroupProcesses kills every process in the cluster's cgroups (the
// containers, and any component the journal missed), a few rounds in case
// one was forking.
func killCgroupProcesses() {
	for round := 0; round < 10; round++ {
		found := false
		for _, d := range cgroupDirs() {
			b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					found = true
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if !found {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func removeCgroups() error {
	var last error
	for round := 0; round < 20; round++ {
		last = nil
		for _, d := range cgroupDirs() {
			if err := unix.Rmdir(d); err != nil && !os.IsNotExist(err) {
				last = err
			}
		}
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// unmountUnder detaches every mount whose mount point starts with one of
// the prefixes, deepest first.
func unmountUnder(prefixes ...string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeMount(f[4])
		for _, pre := range prefixes {
			if pre != "" && strings.HasPrefix(p, pre) {
				points = append(points, p)
				break
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		_ = unix.Unmount(p, unix.MNT_DETACH)
	}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func ignoreNotExist(err error) error {
	if os.IsNotExist(err) {
		return nil
	}
	return err
}
