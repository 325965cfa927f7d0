package certs

import "crypto/tls"

// ServingTLSOptions are the TLS options of the manager's webhook and
// metrics servers: HTTP/1.1 only unless enableHTTP2 (the manager's
// --enable-http2), as kubebuilder scaffolds them, because of the HTTP/2
// Rapid Reset and Stream Cancellation CVEs (GHSA-qppj-fm5r-hxr3,
// GHSA-4374-p667-p6c8). The webhook benchmark's server (test/webhooks)
// uses them too, so it measures what ships.
func ServingTLSOptions(enableHTTP2 bool) []func(*tls.Config) {
	if enableHTTP2 {
		return nil
	}
	return []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
}
