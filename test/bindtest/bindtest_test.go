package bindtest

import (
	"context"
	"strings"
	"testing"
)

// Three nameds with different configurations run side by side.
func TestStartSeveral(t *testing.T) {
	var servers []*Server
	for i, alg := range []string{"hmac-sha256", "hmac-sha512", "hmac-md5"} {
		s := Start(t, Options{
			ControlAlgorithm: alg,
			Files:            map[string]string{"example.test.db": SeedZone("example.test", uint32(i+1))},
			Config:           `zone "example.test" { type primary; file "example.test.db"; };`,
		})
		servers = append(servers, s)
	}
	for _, s := range servers {
		out, err := s.Rndc(context.Background(), "zonestatus", "example.test")
		if err != nil || !strings.Contains(out, "type: primary") {
			t.Fatalf("rndc zonestatus on %s: %v\n%s", s.ControlAddr, err, out)
		}
	}
	if servers[0].DNSAddr == servers[1].DNSAddr || servers[0].Dir == servers[1].Dir {
		t.Fatal("servers share an address or directory")
	}
}
