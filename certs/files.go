package certs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// writeCertDir puts the serving pair and the bundle where the webhook
// server's certwatcher reads them. Each file is replaced by rename, so a
// reader sees either the old or the new file, never a torn one. The key is
// written first: certwatcher reloads on every event and a new certificate
// next to an old key would fail to load until the key arrived.
func writeCertDir(dir string, data map[string][]byte) (changed bool, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{KeyTLSKey, 0o600}, {KeyTLSCert, 0o644}, {KeyCACert, 0o644}} {
		path := filepath.Join(dir, f.name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data[f.name]) {
			continue
		}
		if err := writeAtomic(path, data[f.name], f.mode); err != nil {
			return changed, fmt.Errorf("writing %s: %w", path, err)
		}
		changed = true
	}
	return changed, nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
