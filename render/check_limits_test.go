package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckRunsBoundedWithoutTheOperatorsEnvironment: named-checkconf
// parses tenant input in the pod that holds the operator's token, so each
// run gets an address-space and a CPU limit and an environment of its own
// (PATH and LC_ALL, nothing of the operator's). A stand-in for
// named-checkconf prints what it was given.
func TestCheckRunsBoundedWithoutTheOperatorsEnvironment(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "198.19.0.1")
	t.Setenv("POD_NAMESPACE", "bind-operator-system")
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(probe, []byte("#!/bin/sh\necho \"args=$* v=$(ulimit -v) t=$(ulimit -t)\"\nenv | sort\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := checkCommand(context.Background(), probe, "/config/named.conf.primary").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{"args=-z /config/named.conf.primary", "v=131072", "t=10"} {
		if !strings.Contains(got, want) {
			t.Errorf("the run lacks %q:\n%s", want, got)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n")[1:] {
		name, _, _ := strings.Cut(line, "=")
		switch name {
		case "PATH", "LC_ALL", "PWD", "SHLVL", "_", "OLDPWD":
			// PWD, SHLVL and _ are what sh itself sets.
		default:
			t.Errorf("the run sees %s from the operator's environment", line)
		}
	}
}

// TestCheckOutputIsBounded: a config made to print a line per zone cannot
// make the operator hold all of it.
func TestCheckOutputIsBounded(t *testing.T) {
	var b cappedBuffer
	chunk := strings.Repeat("x", 1000)
	for range 1000 {
		if n, err := b.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if b.Len() != checkOutputBytes {
		t.Errorf("kept %d bytes, want %d", b.Len(), checkOutputBytes)
	}
}
