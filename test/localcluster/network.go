package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// hostSysctls are the sysctls this cluster changes itself (forwarding for
// pod→ClusterIP traffic, bridged traffic through netfilter so kube-proxy's
// rules see it) and the ones the kubelet and kube-proxy rewrite on start.
// Their values are journaled before anything starts and restored on Stop.
var hostSysctls = []string{
	"net.ipv4.ip_forward",
	"net.bridge.bridge-nf-call-iptables",
	"vm.overcommit_memory",
	"vm.panic_on_oom",
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
	"net.netfilter.nf_conntrack_max",
	"net.netfilter.nf_conntrack_tcp_timeout_established",
	"net.netfilter.nf_conntrack_tcp_timeout_close_wait",
	"net.ipv4.conf.all.route_localnet",
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

func readSysctl(name string) (string, bool) {
	b, err := os.ReadFile(sysctlPath(name))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func writeSysctl(name, value string) error {
	return os.WriteFile(sysctlPath(name), []byte(value+"\n"), 0o644)
}

// setupNetwork journals the host's sysctls and nftables tables, then makes
// the bridge the node and its pods live on, the route that keeps ClusterIP
// traffic on it, and a guard table that drops anything a pod sends outside
// the test ranges (docs/testing.md: tests talk only to loopback and
// 198.18.0.0/15).
func (c *Cluster) setupNetwork(ctx context.Context) error {
	tables, err := nftTables(ctx)
	if err != nil {
		return err
	}
	saved := map[string]string{}
	for _, name := range hostSysctls {
		if v, ok := readSysctl(name); ok {
			saved[name] = v
		}
	}
	if err := c.state.update(func(s *state) {
		s.Sysctls = saved
		s.NftTables = tables
	}); err != nil {
		return err
	}
	for _, name := range []string{"net.ipv4.ip_forward", "net.bridge.bridge-nf-call-iptables"} {
		if _, ok := saved[name]; !ok {
			return errorf("sysctl %s is missing: the kernel needs IPv4 forwarding and the br_netfilter module (modprobe br_netfilter)", name)
		}
		if err := writeSysctl(name, "1"); err != nil {
			return errorf("set %s: %v", name, err)
		}
	}
	for _, args := range [][]string{
		{"link", "add", BridgeName, "type", "bridge"},
		{"addr", "add", NodeIP.String() + "/16", "dev", BridgeName},
		{"addr", "add", OutsiderIP.String() + "/32", "dev", BridgeName},
		{"link", "set", BridgeName, "up"},
		// ClusterIPs are DNATed by kube-proxy; the route makes sure a
		// packet it does not know never takes the host's default route.
		{"route", "add", ServiceCIDR.String(), "dev", BridgeName, "src", NodeIP.String()},
	} {
		if _, err := run(ctx, "ip", args...); err != nil {
			return errorf("network: %v", err)
		}
	}
	guard := fmt.Sprintf(`table inet %[1]s {
	chain forward {
		type filter hook forward priority -10; policy accept;
		ip saddr %[2]s ip daddr != { 198.18.0.0/15, 127.0.0.0/8 } counter drop
	}
}
`, nftGuardTable, PodCIDR)
	if err := os.WriteFile(c.opts.path("guard.nft"), []byte(guard), 0o644); err != nil {
		return err
	}
	if _, err := run(ctx, "nft", "-f", c.opts.path("guard.nft")); err != nil {
		return errorf("network: %v", err)
	}
	return c.writeCNIConfig()
}

// writeCNIConfig gives pods an address on the bridge with two routes, the
// pod subnet on link and the Service range via the node; no default route,
// so nothing a pod sends can leave the test network.
func (c *Cluster) writeCNIConfig() error {
	conf := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "bind-localcluster",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q, "rangeStart": "198.18.0.10", "rangeEnd": "198.18.255.254", "gateway": %q}]],
        "routes": [{"dst": %q}]
      }
    }
  ]
}
`, BridgeName, c.opts.path("cni", "ipam"), PodCIDR, NodeIP, ServiceCIDR)
	dir := c.opts.path("cni", "net.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "10-bind-localcluster.conflist"), []byte(conf), 0o644)
}

// nftTables lists the host's nftables tables as "family name".
func nftTables(ctx context.Context) ([]string, error) {
	out, err := run(ctx, "nft", "list", "tables")
	if err != nil {
		return nil, errorf("nftables: %v", err)
	}
	tables := []string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "table" {
			tables = append(tables, f[1]+" "+f[2])
		}
	}
	return tables, nil
}
