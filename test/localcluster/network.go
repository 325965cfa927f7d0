package localcluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
)

// Address plan (DESIGN §7: only 198.18.0.0/15, on links the harness owns).
var (
	podCIDR     = netip.MustParsePrefix("198.18.0.0/16") // the node's podCIDR
	gatewayIP   = netip.MustParseAddr("198.18.0.1")      // on the bridge; also the node's IP
	serviceCIDR = netip.MustParsePrefix("198.19.0.0/16") // kube-apiserver --service-cluster-ip-range
)

// ServiceCIDR is the Service ClusterIP range of the local cluster.
const ServiceCIDR = "198.19.0.0/16"

// PodCIDR is the node's pod range.
const PodCIDR = "198.18.0.0/16"

// ipam hands out pod addresses from a moving cursor: an address comes back
// only after the whole range (65,000 addresses) has been used, so a new pod
// never gets an address one of the recent pods had.
type ipam struct {
	mu     sync.Mutex
	next   uint32
	inUse  map[netip.Addr]bool
	seq    int
	recent []netip.Addr
}

func newIPAM() *ipam { return &ipam{next: 10, inUse: map[netip.Addr]bool{}} }

func (a *ipam) allocate() (netip.Addr, int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	base := binary.BigEndian.Uint32(podCIDR.Addr().AsSlice())
	size := uint32(1) << (32 - podCIDR.Bits())
	for i := uint32(0); i < size; i++ {
		off := a.next
		a.next++
		if a.next >= size-1 {
			a.next = 10
		}
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], base+off)
		ip := netip.AddrFrom4(b)
		if a.inUse[ip] || a.recentlyUsed(ip) {
			continue
		}
		a.inUse[ip] = true
		a.recent = append(a.recent, ip)
		if len(a.recent) > 64 {
			a.recent = a.recent[1:]
		}
		a.seq++
		return ip, a.seq, nil
	}
	return netip.Addr{}, 0, fmt.Errorf("pod range %s exhausted", podCIDR)
}

func (a *ipam) recentlyUsed(ip netip.Addr) bool {
	for _, r := range a.recent {
		if r == ip {
			return true
		}
	}
	return false
}

func (a *ipam) release(ip netip.Addr) {
	a.mu.Lock()
	delete(a.inUse, ip)
	a.mu.Unlock()
}

// setupHostNetwork creates the bridge: it holds the gateway address and,
// as /32s, the Service ClusterIPs. IPv6 is off on both: no router solicitations or
// multicast leave them.
func setupHostNetwork(ctx context.Context) error {
	steps := [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", gatewayIP.String() + "/16", "dev", bridgeName},
	}
	for _, s := range steps {
		if err := run(ctx, "ip", s...); err != nil {
			return err
		}
	}
	for _, l := range []string{bridgeName} {
		writeSysctl(filepath.Join("/proc/sys/net/ipv6/conf", l, "disable_ipv6"), "1")
		if err := run(ctx, "ip", "link", "set", l, "up"); err != nil {
			return err
		}
	}
	return nil
}

// podNet is one pod's network: a namespace with eth0 (its address) on a
// veth whose host end is on the bridge. Its only routes are the pod range
// (on link) and the Service range via the gateway: there is no default
// route, so nothing a pod sends can leave the test network.
type podNet struct {
	ns    string
	veth  string
	ip    netip.Addr
	nsDir string
}

func (n *podNet) path() string { return filepath.Join(netnsDir, n.ns) }

func createPodNet(ctx context.Context, ip netip.Addr, seq int) (*podNet, error) {
	n := &podNet{ns: fmt.Sprintf("%s-pod%d", namePrefix, seq), veth: fmt.Sprintf("%sv%d", namePrefix, seq), ip: ip}
	peer := fmt.Sprintf("%sp%d", namePrefix, seq)
	steps := [][]string{
		{"netns", "add", n.ns},
		{"link", "add", n.veth, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", n.ns},
		{"-n", n.ns, "link", "set", peer, "name", "eth0"},
	}
	for _, s := range steps {
		if err := run(ctx, "ip", s...); err != nil {
			n.teardown(context.Background())
			return nil, err
		}
	}
	writeSysctl(filepath.Join("/proc/sys/net/ipv6/conf", n.veth, "disable_ipv6"), "1")
	// Inside the namespace: IPv6 only on loopback (::1 keeps working).
	_ = run(ctx, "ip", "netns", "exec", n.ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6")
	steps = [][]string{
		{"-n", n.ns, "addr", "add", ip.String() + "/16", "dev", "eth0"},
		{"-n", n.ns, "link", "set", "lo", "up"},
		{"-n", n.ns, "link", "set", "eth0", "up"},
		{"-n", n.ns, "route", "add", serviceCIDR.String(), "via", gatewayIP.String(), "dev", "eth0"},
		{"link", "set", n.veth, "master", bridgeName},
		{"link", "set", n.veth, "up"},
	}
	for _, s := range steps {
		if err := run(ctx, "ip", s...); err != nil {
			n.teardown(context.Background())
			return nil, err
		}
	}
	return n, nil
}

// teardown kills any process left in the namespace, then removes it and
// the veth (best effort; errors are reported by Leftovers at Stop).
func (n *podNet) teardown(ctx context.Context) {
	if _, err := os.Stat(n.path()); err == nil {
		_ = deleteNetns(ctx, n.ns)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", n.veth)); err == nil {
		_ = run(ctx, "ip", "link", "delete", n.veth)
	}
}
