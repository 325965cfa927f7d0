package testkit

import (
	"errors"
	"net"
	"strconv"
	"testing"
)

// FreePort returns a port that is free for TCP and UDP on both 127.0.0.1
// and ::1, so a named, an agent or a webhook server may listen on either
// loopback. Another process may still take it before the caller does;
// callers that start servers retry on a clash.
func FreePort(tb testing.TB) int {
	tb.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if portFree(port) {
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
