package apiwait

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// An API server that is down at first (nothing listens on its port) and
// then ready: Ready waits for it instead of failing.
func TestReadyWaitsForTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(Succeed()) // connections are refused until the server listens

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Ready(ctx, testConfig(addr), 30*time.Second, logr.Discard()) }()
	g.Consistently(done).WithTimeout(1500 * time.Millisecond).ShouldNot(Receive())

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	srv.Listener, err = net.Listen("tcp", addr)
	g.Expect(err).NotTo(HaveOccurred())
	srv.StartTLS()
	defer srv.Close()
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
}

// An API server that answers but is not ready (/readyz fails while it
// starts) is waited for, and the wait is bounded.
func TestReadyGivesUpAfterLimit(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "[-]poststarthook/start-apiextensions-controllers failed", http.StatusInternalServerError)
	}))
	defer srv.Close()
	err := Ready(context.Background(), testConfig(srv.Listener.Addr().String()), 2*time.Second, logr.Discard())
	g.Expect(err).To(MatchError(ContainSubstring("was not ready within 2s")))
}

func testConfig(addr string) *rest.Config {
	return &rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}
