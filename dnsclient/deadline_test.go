package dnsclient

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestContextEndingWithTheReadDeadline: the context's deadline is also the
// connection's read deadline, so the two end together. The context's
// AfterFunc then runs while exchange drops the connection it timed out on;
// it once dereferenced the client's connection field after exchange had
// set it to nil and crashed the manager (the in-cluster bench, during the
// deletes). Against a server that never answers, every round must end in
// an error and nothing else.
func TestContextEndingWithTheReadDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// Read and never answer; closed with the listener's test.
			go func() {
				buf := make([]byte, 4096)
				for {
					if _, err := conn.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	c, err := New(ln.Addr().String(), nil, Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 300 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
		if _, err := c.SOA(ctx, zone); err == nil {
			t.Fatal("a server that never answers answered")
		}
		cancel()
	}
}
