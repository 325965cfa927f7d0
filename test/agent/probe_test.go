package agent_test

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// The agent tries a Secondary zone's transfer the way named does, from its
// pod: what the primary answered is the reason named only logs.
func TestTransferProbe(t *testing.T) {
	const key = `key "xfr" { algorithm hmac-sha256; secret "YmluZC1vcGVyYXRvci10ZXN0LWtleS0zMi1ieXRlcy0hIQ=="; };`
	e := startEnv(t, bindtest.Options{
		Config: key + `
zone "keyed.test" { type primary; file "keyed.test.db"; allow-transfer { key "xfr"; }; };`,
		Files: map[string]string{"keyed.test.db": bindtest.SeedZone("keyed.test", 5)},
	})
	if err := os.WriteFile(filepath.Join(e.paths.KeysDir, render.FileKeys), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port := splitAddr(t, e.named.DNSAddr)
	probe := func(p agent.ProbePrimary) (agent.ProbeOutcome, error) {
		res, err := e.client.ProbeTransfer(ctxT(t), agent.TransferProbeRequest{Zone: "keyed.test", Primaries: []agent.ProbePrimary{p}})
		if err != nil {
			return agent.ProbeOutcome{}, err
		}
		return res.Outcomes[0], nil
	}
	g := NewWithT(t)

	o, err := probe(agent.ProbePrimary{Address: host, Port: port, Key: "xfr"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o).To(Equal(agent.ProbeOutcome{Server: e.named.DNSAddr, Serial: 5}), "the keyed transfer is offered")

	o, err = probe(agent.ProbePrimary{Address: host, Port: port})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.Error).To(Equal("AXFR: dns transfer of zone keyed.test.: REFUSED"), "unsigned, named refuses it")

	// Only the SOA, as a hidden primary asks its external secondaries:
	// served unsigned too, and no transfer is tried.
	res, err := e.client.ProbeTransfer(ctxT(t), agent.TransferProbeRequest{Zone: "keyed.test", SOAOnly: true, Primaries: []agent.ProbePrimary{{Address: host, Port: port}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Outcomes).To(Equal([]agent.ProbeOutcome{{Server: e.named.DNSAddr, Serial: 5}}))
	res, err = e.client.ProbeTransfer(ctxT(t), agent.TransferProbeRequest{Zone: "other.test", SOAOnly: true, Primaries: []agent.ProbePrimary{{Address: host, Port: port}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Outcomes[0].Error).To(HavePrefix("SOA query: "), "a zone the server does not serve")

	for name, p := range map[string]agent.ProbePrimary{
		"key not in keys.conf": {Address: host, Port: port, Key: "other"},
		"not an address":       {Address: "primary.example", Port: port},
		"no port":              {Address: host},
	} {
		_, err := probe(p)
		var ae *agent.Error
		g.Expect(errors.As(err, &ae)).To(BeTrue(), "%s: %v", name, err)
		g.Expect(ae.Status).To(Equal(http.StatusUnprocessableEntity), "%s: %v", name, err)
	}
}

func splitAddr(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}
