package rndc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// fuzzKey signed the captured seed replies in testdata/fuzz/FuzzDecode, so
// the fuzzer starts from frames that verify and can explore past the
// signature check.
var fuzzKey = bindtest.Key{Name: "fuzz", Algorithm: "hmac-sha256", Secret: "ZnV6ei1zZWVkLWtleS1mb3ItcmVwbGF5LWNhcHR1cmVz"}

// FuzzDecode feeds untrusted bytes to the decoder and the verifier: they
// must never panic, and whatever decodes must re-encode and decode to the
// same table.
func FuzzDecode(f *testing.F) {
	key := keyOf(f, fuzzKey)
	f.Add([]byte{0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 1, 5, '_', 'a', 'u', 't', 'h', 2, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, payload []byte) {
		d, err := decode(payload)
		if err != nil {
			return
		}
		_ = key.verify(d, payload)
		_, _ = d.table.Table("_ctrl")
		_, _ = d.table.Uint32("_ser")
		enc, err := appendEntries([]byte{0, 0, 0, 1}, d.table)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		d2, err := decode(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded: %v", err)
		}
		if fmt.Sprint(d2.table) != fmt.Sprint(d.table) {
			t.Fatalf("round trip changed the table")
		}
	})
}

// TestCaptureSeeds records real named replies as fuzz seeds. It only runs
// with RNDC_CAPTURE=1 (the seeds are committed).
func TestCaptureSeeds(t *testing.T) {
	if os.Getenv("RNDC_CAPTURE") == "" {
		t.Skip("set RNDC_CAPTURE=1 to re-capture testdata/fuzz/FuzzDecode")
	}
	k := fuzzKey
	s := bindtest.Start(t, bindtest.Options{ControlKey: &k})
	s.WriteFile("seed.test.db", bindtest.SeedZone("seed.test", 1))
	var replies [][]byte
	d := Dialer{onReply: func(p []byte) { replies = append(replies, bytes.Clone(p)) }}
	c, err := d.Dial(ctxT(t), s.ControlAddr, keyOf(t, fuzzKey))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, cmd := range []string{"status", `addzone seed.test { type primary; file "seed.test.db"; };`, "showzone seed.test", "zonestatus seed.test", "zonestatus missing.test", "delzone seed.test"} {
		_, _ = c.Command(ctxT(t), cmd)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, p := range replies {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", p)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("named-reply-%d", i)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("captured %d replies", len(replies))
}

// The committed seeds are real named replies: each must decode and verify.
func TestSeedsVerify(t *testing.T) {
	key := keyOf(t, fuzzKey)
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDecode", "named-reply-*"))
	if len(files) == 0 {
		t.Fatal("no captured seeds")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(string(b), "\n", 3)
		raw, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d, err := decode([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := key.verify(d, []byte(raw)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}
