package main

import (
	"crypto/tls"
	"slices"
	"testing"
)

// TestHTTP2OffByDefault: the webhook and metrics servers speak HTTP/1.1
// only unless --enable-http2 is given (kubebuilder's scaffold; HTTP/2
// Rapid Reset and Stream Cancellation).
func TestHTTP2OffByDefault(t *testing.T) {
	o, _, err := parseManagerFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.enableHTTP2 {
		t.Fatal("--enable-http2 defaults to true")
	}
	c := &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
	disableHTTP2(c)
	if slices.Contains(c.NextProtos, "h2") || !slices.Equal(c.NextProtos, []string{"http/1.1"}) {
		t.Fatalf("NextProtos = %v, want [http/1.1]", c.NextProtos)
	}
}
