package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// CheckError is named-checkconf's complaint about one variant.
type CheckError struct {
	File   string // FilePrimaryConf or FileSecondaryConf
	Output string // the checker's own words, temp paths replaced by pod paths
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("named-checkconf rejects %s: %s", e.File, e.Output)
}

// Check renders in and runs the real named-checkconf -z on both variants,
// with every file the pods would have in place (keys, static zone files,
// seeded catalogs, data directories) under a temporary root. The controller
// calls it before replacing a ConfigMap, so pods never roll into a config
// that named would refuse.
func Check(ctx context.Context, in Input, namedCheckconf string) error {
	_, err := CheckOutput(ctx, in, namedCheckconf)
	return err
}

// named-checkconf parses tenant input (every object that reaches the
// render) in the operator's pod, which holds the operator's token. Each run
// is therefore bounded and sees nothing of the operator's environment:
const (
	// checkAddressSpaceKiB caps its address space (ulimit -v): 10,000
	// zones need about 28 MiB resident, and two runs at once must stay far
	// below the manager's memory limit.
	checkAddressSpaceKiB = 128 << 10
	// checkCPUSeconds caps its CPU time (ulimit -t): 10,000 zones take
	// under half a second.
	checkCPUSeconds = 10
	// checkTimeout bounds a run's wall time when the caller set no
	// shorter deadline (the admission webhook does).
	checkTimeout = 30 * time.Second
	// checkOutputBytes bounds what is kept of its output: enough for any
	// message, not for a config made to print a line per zone.
	checkOutputBytes = 64 << 10
)

// checkEnv is the whole environment of a run: no Kubernetes variables, no
// operator settings.
var checkEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}

// checkCommand runs named-checkconf -z on file under the limits above,
// through sh's ulimit (every image the operator runs in has sh; Go cannot
// set a child's rlimits itself).
func checkCommand(ctx context.Context, namedCheckconf, file string) *exec.Cmd {
	script := fmt.Sprintf(`ulimit -v %d && ulimit -t %d && exec "$0" "$@"`, checkAddressSpaceKiB, checkCPUSeconds)
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script, namedCheckconf, "-z", file)
	cmd.Env = checkEnv
	return cmd
}

// cappedBuffer keeps the first checkOutputBytes written to it.
type cappedBuffer struct{ bytes.Buffer }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := checkOutputBytes - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// loadedLine is the only output of a clean named-checkconf -z run.
var loadedLine = regexp.MustCompile(`^zone \S+: loaded serial \d+$`)

// CheckOutput is Check, returning also what named-checkconf printed on an
// accepted config besides "loaded serial" lines: warnings, e.g. about an
// option in spec.extraOptions. The render's own tests require none.
func CheckOutput(ctx context.Context, in Input, namedCheckconf string) (warnings []string, err error) {
	if namedCheckconf == "" {
		namedCheckconf = "named-checkconf"
	}
	real := in.Paths
	if real == (Paths{}) {
		real = DefaultPaths()
	}
	tmp, err := os.MkdirTemp("", "bind-render-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	in.Paths = Paths{
		ConfigDir: filepath.Join(tmp, "config"),
		KeysDir:   filepath.Join(tmp, "keys"),
		DataDir:   filepath.Join(tmp, "data"),
	}
	res, lay, err := render(in)
	if err != nil {
		return nil, err
	}
	if err := materialize(in.Paths, res, lay); err != nil {
		return nil, fmt.Errorf("preparing the config check: %w", err)
	}
	unTemp := strings.NewReplacer(
		in.Paths.ConfigDir, real.ConfigDir,
		in.Paths.KeysDir, real.KeysDir,
		in.Paths.DataDir, real.DataDir,
		tmp, "",
	)
	// Both variants are checked at once (each run is tens of milliseconds,
	// and the admission webhook waits for them); results are read in order,
	// so the primary's complaint comes first.
	files := []string{FilePrimaryConf, FileSecondaryConf}
	type run struct {
		out cappedBuffer
		err error
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	runs := make([]run, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := checkCommand(ctx, namedCheckconf, filepath.Join(in.Paths.ConfigDir, f))
			cmd.Stdout, cmd.Stderr = &runs[i].out, &runs[i].out
			runs[i].err = cmd.Run()
		}()
	}
	wg.Wait()
	for i, f := range files {
		out, runErr := &runs[i].out, runs[i].err
		var lines []string
		for _, l := range strings.Split(out.String(), "\n") {
			l = strings.TrimSpace(unTemp.Replace(l))
			if l != "" && !loadedLine.MatchString(l) {
				lines = append(lines, l)
			}
		}
		if runErr != nil {
			var exit *exec.ExitError
			// 127: sh found no such program.
			if !errors.As(runErr, &exit) || exit.ExitCode() == 127 {
				return nil, fmt.Errorf("running %s (run make deps to install BIND's tools): %w: %s", namedCheckconf, runErr, strings.Join(lines, "; "))
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("named-checkconf did not finish checking %s: %w", f, ctx.Err())
			}
			msg := strings.Join(lines, "; ")
			if !exit.Exited() || exit.ExitCode() > 128 {
				// Killed: SIGXCPU, or an abort when an allocation failed.
				msg = fmt.Sprintf("named-checkconf exceeded its limits (%d MiB of address space, %d s of CPU) on this configuration (%s)", checkAddressSpaceKiB>>10, checkCPUSeconds, exit)
			}
			if msg == "" {
				msg = exit.String()
			}
			return nil, &CheckError{File: f, Output: msg}
		}
		for _, l := range lines {
			warnings = append(warnings, f+": "+l)
		}
	}
	return warnings, nil
}

// materialize lays out a pod's files under p: the ConfigMap, the Secret and
// what the entrypoint prepares in DataDir.
func materialize(p Paths, res Result, lay layout) error {
	for _, d := range []string{p.ConfigDir, p.KeysDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, data := range []map[string]string{res.ConfigData, res.SeedData} {
		for k, v := range data {
			if err := os.WriteFile(filepath.Join(p.ConfigDir, k), []byte(v), 0o644); err != nil {
				return err
			}
		}
	}
	for k, v := range res.SecretData {
		if err := os.WriteFile(filepath.Join(p.KeysDir, k), v, 0o600); err != nil {
			return err
		}
	}
	for _, d := range lay.dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, s := range lay.seeds {
		if err := os.WriteFile(s[1], []byte(res.ConfigData[s[0]]), 0o644); err != nil {
			return err
		}
	}
	for _, s := range lay.everySeeds {
		if err := os.WriteFile(s[1], []byte(res.SeedData[s[0]]), 0o644); err != nil {
			return err
		}
	}
	return nil
}
