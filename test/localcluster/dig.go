package localcluster

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/miekg/dns"
)

// testNet is where the helpers here may send (docs/testing.md): the local
// cluster's pod and Service ranges; loopback is allowed too.
var testNet = netip.MustParsePrefix("198.18.0.0/15")

// IsTestHost reports whether a test may send to ip: loopback or the local
// cluster's addresses in 198.18.0.0/15 (docs/testing.md).
func IsTestHost(ip netip.Addr) bool { return ip.IsLoopback() || testNet.Contains(ip.Unmap()) }

// Dig sends one query over UDP from the host. server is an address,
// optionally with a port (default 53); it must be loopback or inside
// 198.18.0.0/15.
func Dig(server, name string, qtype uint16) (*dns.Msg, error) { return dig("udp", server, name, qtype) }

// DigTCP is Dig over TCP.
func DigTCP(server, name string, qtype uint16) (*dns.Msg, error) {
	return dig("tcp", server, name, qtype)
}

func dig(network, server, name string, qtype uint16) (*dns.Msg, error) {
	return Exchange(network, server, question(name, qtype))
}

// question asks for name's qtype records without recursion, as dig
// +norecurse does.
func question(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = false
	return m
}

// testHostAddr is server (an address, optionally with a port, default 53)
// as host:port, or an error when it is not an IP address inside loopback
// or 198.18.0.0/15.
func testHostAddr(server string) (string, error) {
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		host, port = server, "53"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "", fmt.Errorf("dig: server %q is not an IP address", server)
	}
	if !IsTestHost(ip) {
		return "", fmt.Errorf("dig: refusing to query %s: only loopback and %s are test hosts (docs/testing.md)", ip, testNet)
	}
	return net.JoinHostPort(host, port), nil
}

// Exchange sends m to server over network ("udp" or "tcp") with a 2 s
// timeout, refusing any server outside loopback and 198.18.0.0/15.
func Exchange(network, server string, m *dns.Msg) (*dns.Msg, error) {
	return ExchangeFrom(netip.Addr{}, network, server, m)
}

// ExchangeFrom is Exchange from the source address src (the zero Addr lets
// the kernel choose): OutsiderIP makes the query come from a client other
// than the node.
func ExchangeFrom(src netip.Addr, network, server string, m *dns.Msg) (*dns.Msg, error) {
	return ExchangeSignedFrom(src, network, server, m, nil)
}

// ExchangeSignedFrom is ExchangeFrom for a message m the caller signed
// (m.SetTsig): tsig maps the key's name to its base64 secret, and the
// reply's signature is verified.
func ExchangeSignedFrom(src netip.Addr, network, server string, m *dns.Msg, tsig map[string]string) (*dns.Msg, error) {
	addr, err := testHostAddr(server)
	if err != nil {
		return nil, err
	}
	c := &dns.Client{Net: network, Timeout: 2 * time.Second, TsigSecret: tsig}
	if src.IsValid() {
		c.Dialer = &net.Dialer{Timeout: 2 * time.Second}
		if network == "tcp" {
			c.Dialer.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
		} else {
			c.Dialer.LocalAddr = &net.UDPAddr{IP: src.AsSlice()}
		}
	}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		return nil, fmt.Errorf("dig %s %s @%s over %s: %w", m.Question[0].Name, dns.TypeToString[m.Question[0].Qtype], server, network, err)
	}
	return r, nil
}

// Querier sends many queries to one server over one UDP socket. A poller
// that asks every few milliseconds would otherwise make and free a socket
// per query, and on a small node the kernel's work for that (and the
// reclaim of what it frees) takes a CPU share the system under test then
// lacks.
type Querier struct {
	server string
	client *dns.Client
	conn   *dns.Conn
}

// DialQuerier opens a Querier to server (as Dig's: an address, optionally
// with a port, inside loopback or 198.18.0.0/15).
func DialQuerier(server string) (*Querier, error) {
	addr, err := testHostAddr(server)
	if err != nil {
		return nil, err
	}
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	conn, err := c.Dial(addr)
	if err != nil {
		return nil, fmt.Errorf("dig @%s: %w", server, err)
	}
	return &Querier{server: server, client: c, conn: conn}, nil
}

// Query asks for name's qtype records without recursion. A reply that
// comes after its query timed out is told from the next one's by its ID
// and skipped.
func (q *Querier) Query(name string, qtype uint16) (*dns.Msg, error) {
	m := question(name, qtype)
	r, _, err := q.client.ExchangeWithConn(m, q.conn)
	if err != nil {
		return nil, fmt.Errorf("dig %s %s @%s: %w", m.Question[0].Name, dns.TypeToString[qtype], q.server, err)
	}
	return r, nil
}

// Close closes the socket.
func (q *Querier) Close() error { return q.conn.Close() }
