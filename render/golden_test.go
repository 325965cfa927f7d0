package render

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenText lays out a Result as one reviewable file: every ConfigMap and
// Secret entry under a header, in key order.
func goldenText(r Result) string {
	var b strings.Builder
	for _, k := range sortedKeys(r.ConfigData) {
		b.WriteString("=== ConfigMap " + k + " ===\n")
		b.WriteString(r.ConfigData[k])
	}
	for _, k := range sortedKeys(r.SeedData) {
		b.WriteString("=== ConfigMap (seed, not hashed) " + k + " ===\n")
		b.WriteString(r.SeedData[k])
	}
	for _, k := range sortedKeys(r.SecretData) {
		b.WriteString("=== Secret " + k + " ===\n")
		b.Write(r.SecretData[k])
	}
	return b.String()
}

// TestGolden pins the rendered bytes of every scenario. A diff here is a
// change of what every pod runs, and a roll of every cluster on upgrade:
// review it, then regenerate with `go test ./render -run TestGolden -update`.
func TestGolden(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			res, err := Render(sc.in())
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			for _, k := range []string{FilePrimaryConf, FileSecondaryConf, FileEntrypoint} {
				if res.ConfigData[k] == "" {
					t.Errorf("ConfigData has no %s", k)
				}
			}
			for _, k := range []string{FileKeys, FileControl} {
				if len(res.SecretData[k]) == 0 {
					t.Errorf("SecretData has no %s", k)
				}
			}
			got := goldenText(res)
			path := filepath.Join("testdata", sc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("render of %s differs from %s (rerun with -update after review):\n%s", sc.name, path, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff shows the first differing lines; enough to see what moved.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
			if shown++; shown == 10 {
				break
			}
		}
	}
	return b.String()
}

func namedCheckconf(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("named-checkconf")
	if err != nil {
		t.Fatalf("named-checkconf not found (%v): run make deps to install BIND 9.18's tools", err)
	}
	return bin
}

// TestNamedCheckconf runs the real named-checkconf -z on both variants of
// every scenario, with keys, policy zones, catalog seeds and data
// directories in place, and fails on any output but "loaded serial" lines:
// a warning today is a refused config after the next BIND upgrade.
func TestNamedCheckconf(t *testing.T) {
	bin := namedCheckconf(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			warnings, err := CheckOutput(context.Background(), sc.in(), bin)
			if err != nil {
				t.Fatalf("named-checkconf: %v", err)
			}
			for _, w := range warnings {
				t.Errorf("named-checkconf warns: %s", w)
			}
		})
	}
}
