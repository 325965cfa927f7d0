package localcluster

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/miekg/dns"
)

// testNet is where Dig may send (DESIGN §7): loopback and the local
// cluster's pod and Service ranges.
var testNet = netip.MustParsePrefix("198.18.0.0/15")

// Dig sends one query over UDP from the host (no exec into pods). server
// is an address, optionally with a port (default 53); it must be loopback
// or inside 198.18.0.0/15.
func Dig(server, name string, qtype uint16) (*dns.Msg, error) { return dig("udp", server, name, qtype) }

// DigTCP is Dig over TCP.
func DigTCP(server, name string, qtype uint16) (*dns.Msg, error) {
	return dig("tcp", server, name, qtype)
}

func dig(network, server, name string, qtype uint16) (*dns.Msg, error) {
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		host, port = server, "53"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil, fmt.Errorf("dig: server %q is not an IP address", server)
	}
	if !ip.IsLoopback() && !testNet.Contains(ip.Unmap()) {
		return nil, fmt.Errorf("dig: refusing to query %s: only loopback and %s are test hosts (DESIGN §7)", ip, testNet)
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = false
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("dig %s %s @%s over %s: %w", name, dns.TypeToString[qtype], server, network, err)
	}
	return r, nil
}

// Dig and DigTCP on a Cluster are the same as the package functions.
func (c *Cluster) Dig(server, name string, qtype uint16) (*dns.Msg, error) {
	return Dig(server, name, qtype)
}

// DigTCP queries over TCP.
func (c *Cluster) DigTCP(server, name string, qtype uint16) (*dns.Msg, error) {
	return DigTCP(server, name, qtype)
}
