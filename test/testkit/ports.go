package testkit

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
)

// handedOut holds every port FreePort returned in this process. A port
// handed out is closed until its caller starts a server on it, so the
// kernel may offer it again in between: two FreePort calls before either
// server starts could return the same port. named listens with SO_REUSEPORT,
// so it then binds DNS and its statistics channel to one TCP port without
// an error, and half the queries reach the HTTP server (a CI run saw
// "SOA query: EOF"). Never handing a port out twice closes that window
// within a test binary; 28,000 ephemeral ports are far more than one binary
// asks for.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePort returns a port that is free for TCP and UDP on both 127.0.0.1
// and ::1, so a named, an agent or a webhook server may listen on either
// loopback, and that no earlier call in this process returned. Another
// process may still take it before the caller does; callers that start
// servers retry on a clash.
func FreePort(tb testing.TB) int {
	tb.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] && portFree(port) {
			handedOut.ports[port] = true
			return port
		}
	}
	tb.Fatal(errors.New("no port free for TCP and UDP on 127.0.0.1 and ::1"))
	return 0
}

func portFree(port int) bool {
	for _, host := range []string{"127.0.0.1", "::1"} {
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		_ = l.Close()
		u, err := net.ListenPacket("udp", addr)
		if err != nil {
			return false
		}
		_ = u.Close()
	}
	return true
}
