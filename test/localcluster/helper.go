package localcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// helperEnv carries a containerSpec to a re-executed copy of the running
// binary (the test binary or the localcluster command). Any program that
// imports this package therefore doubles as the container launcher: the
// init function below notices the variable, enters the pod's namespaces,
// mounts the volumes and execs the container's command. Nothing else of the
// program runs in that copy.
const helperEnv = "BIND_OPERATOR_LOCALCLUSTER_CONTAINER"

// containerSpec is what the launcher needs to become a container process.
type containerSpec struct {
	Name     string   `json:"name"`
	NetNS    string   `json:"netns"`    // path of the pod's network namespace
	Hostname string   `json:"hostname"` // the pod's name (UTS namespace)
	Mounts   []mount  `json:"mounts"`   // in order, parents before children
	Dir      string   `json:"dir"`
	Argv     []string `json:"argv"`
	Env      []string `json:"env"`
}

type mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly"`
	File     bool   `json:"file"`
}

func init() {
	if s := os.Getenv(helperEnv); s != "" {
		runContainer(s)
	}
}

// runContainer never returns: it execs the container command or exits 127
// with the reason on stderr (the container's log file).
func runContainer(raw string) {
	// Namespaces are per thread: stay on the thread that execs.
	runtime.LockOSThread()
	var s containerSpec
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "localcluster: container %q: %s\n", s.Name, fmt.Sprintf(format, a...))
		os.Exit(127)
	}
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fail("bad launcher spec: %v", err)
	}
	if len(s.Argv) == 0 {
		fail("no command: the pod gives none and the image table has no entrypoint")
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWUTS); err != nil {
		fail("unshare mount+uts namespaces: %v", err)
	}
	// Nothing mounted here may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fail("make / private: %v", err)
	}
	if s.Hostname != "" {
		if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
			fail("sethostname: %v", err)
		}
	}
	fd, err := unix.Open(s.NetNS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		fail("open network namespace %s: %v", s.NetNS, err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		fail("enter network namespace %s: %v", s.NetNS, err)
	}
	_ = unix.Close(fd)
	// An absolute command that exists on the host (an image table
	// entrypoint such as a bind-operator binary under /tmp) stays
	// executable even when a mount hides its folder.
	hostExe := -1
	if filepath.IsAbs(s.Argv[0]) {
		if fd, err := unix.Open(s.Argv[0], unix.O_PATH, 0); err == nil {
			hostExe = fd
		}
	}
	// Hold every source before mounting anything: a mount (say a private
	// /tmp) may hide the host path of a later source (the work folder).
	srcFDs := make([]int, len(s.Mounts))
	for i, m := range s.Mounts {
		fd, err := unix.Open(m.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			fail("open volume source %s: %v", m.Source, err)
		}
		srcFDs[i] = fd
	}
	for i, m := range s.Mounts {
		// Mount points the harness could not pre-create on the host (they
		// live inside another volume) are created here, inside that volume.
		if _, err := os.Lstat(m.Target); os.IsNotExist(err) {
			if m.File {
				if err := os.MkdirAll(filepath.Dir(m.Target), 0o755); err == nil {
					if f, err := os.OpenFile(m.Target, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
						_ = f.Close()
					}
				}
			} else {
				_ = os.MkdirAll(m.Target, 0o755)
			}
		}
		src := fmt.Sprintf("/proc/self/fd/%d", srcFDs[i])
		if err := unix.Mount(src, m.Target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			fail("bind mount %s on %s: %v", m.Source, m.Target, err)
		}
		if m.ReadOnly {
			if err := unix.Mount("", m.Target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				fail("remount %s read-only: %v", m.Target, err)
			}
		}
	}
	for _, fd := range srcFDs {
		_ = unix.Close(fd)
	}
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.Chdir(dir); err != nil {
		fail("chdir %s: %v", dir, err)
	}
	// Resolve the command with the container's PATH, after the mounts.
	for _, e := range s.Env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			_ = os.Setenv("PATH", v)
		}
	}
	path := s.Argv[0]
	if _, err := os.Stat(path); err != nil && hostExe >= 0 {
		path = fmt.Sprintf("/proc/self/fd/%d", hostExe)
	}
	if !strings.Contains(path, "/") {
		p, err := exec.LookPath(path)
		if err != nil {
			fail("command %q not found in PATH %s", path, os.Getenv("PATH"))
		}
		path = p
	}
	err = unix.Exec(path, s.Argv, s.Env)
	fail("exec %s: %v", path, err)
}
