package certs

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

var netDialer = net.Dialer{Timeout: 2 * time.Second}

// TestWebhookServerPicksUpRotatedCertificate shows that controller-runtime
// v0.25.2's webhook server reloads its certificate from CertDir (certwatcher:
// fsnotify plus a 10 s poll) while it keeps running. Both ways the folder
// changes in production are covered: files replaced by rename (what the
// self-managed mode does) and the kubelet's Secret volume layout, where
// tls.crt is a symlink through ..data and an update swaps ..data.
func TestWebhookServerPicksUpRotatedCertificate(t *testing.T) {
	names := []string{"webhook-service.ns.svc"}
	ca := issue(t, nil, "rotation-ca", nil, time.Now().Add(24*time.Hour))
	first := issue(t, ca, names[0], names, time.Now().Add(time.Hour))
	second := issue(t, ca, names[0], names, time.Now().Add(2*time.Hour))

	layouts := map[string]struct {
		install func(t *testing.T, dir string, p *testPair)
		rotate  func(t *testing.T, dir string, p *testPair)
	}{
		"rename": {install: writePairByRename, rotate: writePairByRename},
		"kubelet secret volume": {
			install: func(t *testing.T, dir string, p *testPair) {
				writeKubeletPayload(t, dir, "..2026_12_01_00_00_00.1", p)
				for _, n := range []string{"tls.crt", "tls.key"} {
					testkit.Must(t, os.Symlink(filepath.Join("..data", n), filepath.Join(dir, n)))
				}
			},
			rotate: func(t *testing.T, dir string, p *testPair) {
				writeKubeletPayload(t, dir, "..2026_12_01_00_00_00.2", p)
				// The kubelet removes the previous payload after the swap.
				testkit.Must(t, os.RemoveAll(filepath.Join(dir, "..2026_12_01_00_00_00.1")))
			},
		},
	}
	for name, l := range layouts {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l.install(t, dir, first)
			port := testkit.FreePort(t)
			srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- srv.Start(runCtx) }()
			t.Cleanup(func() {
				cancel()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Error("webhook server did not stop within 10s")
				}
			})
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

			NewWithT(t).Eventually(func() bool {
				c, err := servedCertificate(addr)
				return err == nil && c.Equal(first.cert)
			}).Should(BeTrue(), "webhook server serves the first certificate")

			l.rotate(t, dir, second)
			NewWithT(t).Eventually(func() bool {
				c, err := servedCertificate(addr)
				return err == nil && c.Equal(second.cert)
			}).Should(BeTrue(), "a new handshake sees the rotated certificate")
			select {
			case err := <-done:
				t.Fatalf("the webhook server stopped (%v): the rotation must not need a restart", err)
			default:
			}
		})
	}
}

func writePairByRename(t *testing.T, dir string, p *testPair) {
	t.Helper()
	for name, data := range map[string][]byte{"tls.key": p.keyPEM, "tls.crt": p.certPEM} {
		tmp := filepath.Join(dir, "."+name+".tmp")
		testkit.Must(t, os.WriteFile(tmp, data, 0o600))
		testkit.Must(t, os.Rename(tmp, filepath.Join(dir, name)))
	}
}

// writeKubeletPayload mimics pkg/volume/util/atomic_writer.go: write a new
// timestamped folder, point ..data_tmp at it, rename ..data_tmp over ..data.
func writeKubeletPayload(t *testing.T, dir, payload string, p *testPair) {
	t.Helper()
	testkit.Must(t, os.Mkdir(filepath.Join(dir, payload), 0o755))
	testkit.Must(t, os.WriteFile(filepath.Join(dir, payload, "tls.crt"), p.certPEM, 0o644))
	testkit.Must(t, os.WriteFile(filepath.Join(dir, payload, "tls.key"), p.keyPEM, 0o600))
	testkit.Must(t, os.Symlink(payload, filepath.Join(dir, "..data_tmp")))
	testkit.Must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
}
