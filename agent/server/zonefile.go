package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// stageFile writes what src holds to a temporary file in path's directory
// (made if missing) and returns its name; the caller links or renames it
// into place and removes the name afterwards. The file is readable by
// named, which may run as another user sharing the volume's group.
func stageFile(path string, src io.Reader) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, stagePrefix+"*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(tmp, src)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// stagePrefix starts the name of every staged file (stageFile).
const stagePrefix = ".stage-"

// sweepStaged removes staged files left under dir by an agent that
// stopped between staging and linking (a crash, a killed pod): nothing
// names them, and a seed's is up to 14 MiB. Called before the agent
// serves, when no staging of this process can be under way. It returns
// how many it removed and the first error met; what it cannot read or
// remove it leaves, and goes on.
func sweepStaged(dir string) (int, error) {
	removed := 0
	var first error
	note := func(err error) {
		if first == nil && !errors.Is(err, fs.ErrNotExist) {
			first = err
		}
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			note(err)
			if d != nil && d.IsDir() && p != dir {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && strings.HasPrefix(d.Name(), stagePrefix) {
			if err := os.Remove(p); err != nil {
				note(err)
			} else {
				removed++
			}
		}
		return nil
	})
	return removed, first
}

// writeIfMissing creates path with content unless it exists. The content
// is staged and linked into place, which fails if the path exists: named
// never sees a half-written seed, and a zone file that holds dynamic
// updates is never replaced.
func writeIfMissing(path, content string) (bool, error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	}
	tmp, err := stageFile(path, strings.NewReader(content))
	if err != nil {
		return false, fmt.Errorf("seed: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("seed: %w", err)
	}
	return true, nil
}

// replaceFile writes content to path atomically (staged, then renamed): a
// reader such as named sees the old file or the new one, never a part.
func replaceFile(path, content string) error {
	tmp, err := stageFile(path, strings.NewReader(content))
	if err != nil {
		return fmt.Errorf("zone file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("zone file: %w", err)
	}
	return nil
}
