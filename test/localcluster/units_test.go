package localcluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func TestNormaliseImage(t *testing.T) {
	for in, want := range map[string]string{
		"docker.io/internetsystemsconsortium/bind9:9.18": "docker.io/internetsystemsconsortium/bind9",
		"internetsystemsconsortium/bind9":                "docker.io/internetsystemsconsortium/bind9",
		"busybox:1.36":                                   "docker.io/library/busybox",
		"git.unkin.net/unkin/bind-operator:latest":       "git.unkin.net/unkin/bind-operator",
		"localhost:5000/x/y@sha256:abc":                  "localhost:5000/x/y",
	} {
		if got := normaliseImage(in); got != want {
			t.Errorf("normaliseImage(%q) = %q, want %q", in, got, want)
		}
	}
	tbl := DefaultImages("/bin/op", "")
	img, err := lookupImage(tbl, "git.unkin.net/unkin/bind-operator:v1")
	if err != nil || img.Entrypoint[0] != "/bin/op" {
		t.Fatalf("operator image: %v %v", img, err)
	}
	if argv := containerArgv(img, nil, []string{"agent", "--x"}); len(argv) != 3 || argv[0] != "/bin/op" || argv[1] != "agent" {
		t.Fatalf("argv %q", argv)
	}
	if argv := containerArgv(tbl[BindImage], []string{"/bin/sh", "e.sh"}, nil); len(argv) != 2 {
		t.Fatalf("command must drop CMD: %q", argv)
	}
	if _, err := lookupImage(DefaultImages("", ""), "git.unkin.net/unkin/bind-operator"); err == nil {
		t.Fatal("operator image without a binary must be unmapped")
	}
}

func TestExpandVars(t *testing.T) {
	env := map[string]string{"A": "1", "B": "two"}
	for in, want := range map[string]string{
		"$(A)-$(B)": "1-two", "$$(A)": "$(A)", "$(C)": "$(C)", "x$": "x$", "$(A": "$(A",
	} {
		if got := expandVars(in, env); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

// A new pod never gets an address one of the last 50 pods had, even when
// they have been released.
func TestIPAMNeverReusesRecent(t *testing.T) {
	a := newIPAM()
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		ip, _, err := a.allocate()
		if err != nil {
			t.Fatal(err)
		}
		if seen[ip.String()] || !podCIDR.Contains(ip) || ip == gatewayIP {
			t.Fatalf("allocation %d: %s reused or outside %s", i, ip, podCIDR)
		}
		seen[ip.String()] = true
		a.release(ip)
	}
}

// ConfigMap-style volumes are swapped atomically and stale keys vanish.
func TestAtomicWrite(t *testing.T) {
	dir := t.TempDir()
	if err := atomicWrite(dir, map[string]fileData{"a": {data: []byte("1"), mode: 0o644}, "sub/b": {data: []byte("2"), mode: 0o600}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "b")); string(b) != "2" {
		t.Fatalf("sub/b = %q", b)
	}
	if err := atomicWrite(dir, map[string]fileData{"a": {data: []byte("new"), mode: 0o440}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); string(b) != "new" {
		t.Fatalf("a = %q", b)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a")); fi.Mode().Perm() != 0o440 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Fatalf("stale key sub still there: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 { // a, ..data, ..<ts>
		t.Fatalf("entries %v", entries)
	}
	if err := atomicWrite(dir, map[string]fileData{"../x": {}}); err == nil {
		t.Fatal("path escaping the volume accepted")
	}
}

func TestHTTPProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(503)
	}))
	defer srv.Close()
	if ok, msg := httpProbe(context.Background(), srv.URL+"/readyz", nil); !ok {
		t.Fatal(msg)
	}
	if ok, _ := httpProbe(context.Background(), srv.URL+"/other", nil); ok {
		t.Fatal("503 counted as success")
	}
}

func TestDigRefusesOutsideTestNet(t *testing.T) {
	if _, err := Dig("10.0.0.1", "x.test", 1); err == nil {
		t.Fatal("query to 10.0.0.1 allowed")
	}
}
