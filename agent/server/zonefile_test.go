package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Staged files an earlier run left behind are removed, wherever they are
// under the data directory, and nothing else is.
func TestSweepStaged(t *testing.T) {
	dir := t.TempDir()
	keep := []string{"zones/_default/example.com.db", "zones/v1/example.com.db.seeded", "keys/example.com/Kexample.com.+013+1.key", ".stagefile"}
	staged := []string{"zones/_default/.stage-123", "rpz/v1/.stage-9", "keys/example.com/.stage-abc"}
	for _, p := range append(append([]string{}, keep...), staged...) {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A file staged now lands where the sweep looks.
	tmp, err := stageFile(filepath.Join(dir, "zones/_default/new.db"), strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := sweepStaged(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(staged)+1 {
		t.Errorf("removed %d files, want %d", n, len(staged)+1)
	}
	for _, p := range append(staged, strings.TrimPrefix(tmp, dir+"/")) {
		if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	for _, p := range keep {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if n, err := sweepStaged(filepath.Join(dir, "missing")); n != 0 || err != nil {
		t.Errorf("a missing directory: %d, %v", n, err)
	}
}
