package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/render"
)

// probeTimeout bounds one primary's SOA query and AXFR start, like
// named's own transfer attempt would be bounded.
const probeTimeout = 5 * time.Second

// maxKeysFile bounds keys.conf (every BindTSIGKey the cluster references).
const maxKeysFile = 4 << 20

// errOffered stops a probe's AXFR after its first record: the primary
// offered the transfer, which is all the probe asks.
var errOffered = errors.New("transfer offered")

// handleProbe tries, from this pod, the transfer named makes of a
// Secondary zone (agent.TransferProbeRequest). named 9.18 only logs why a
// transfer failed (and `named -g` ignores logging config), so the operator
// asks the pod's agent to repeat the attempt and reports its outcome.
func (a *Agent) handleProbe(w http.ResponseWriter, r *http.Request) error {
	var req agent.TransferProbeRequest
	if err := decode(w, r, agent.MaxRequestBytes, &req); err != nil {
		return err
	}
	zone, err := validate.ZoneName(req.Zone)
	if err != nil {
		return err
	}
	if len(req.Primaries) == 0 || len(req.Primaries) > agent.MaxProbePrimaries {
		return &validate.Error{Field: "primaries", Reason: fmt.Sprintf("between 1 and %d primaries", agent.MaxProbePrimaries)}
	}
	keys, err := a.transferKeys(req.Primaries)
	if err != nil {
		return err
	}
	servers := make([]string, len(req.Primaries))
	for i, p := range req.Primaries {
		ip, err := netip.ParseAddr(p.Address)
		if err != nil || ip.Zone() != "" {
			return &validate.Error{Field: fmt.Sprintf("primaries[%d].address", i), Reason: "not an IP address"}
		}
		if p.Port < 1 || p.Port > 65535 {
			return &validate.Error{Field: fmt.Sprintf("primaries[%d].port", i), Reason: "not a port"}
		}
		servers[i] = net.JoinHostPort(ip.String(), strconv.Itoa(p.Port))
	}
	out := agent.TransferProbeResult{Outcomes: make([]agent.ProbeOutcome, len(req.Primaries))}
	var wg sync.WaitGroup
	for i, p := range req.Primaries {
		wg.Go(func() {
			out.Outcomes[i] = probeTransfer(r.Context(), servers[i], keys[p.Key], zone, req.SOAOnly)
		})
	}
	wg.Wait()
	writeJSON(w, http.StatusOK, out)
	return nil
}

// transferKeys loads the keys the primaries name from the pod's keys.conf.
func (a *Agent) transferKeys(primaries []agent.ProbePrimary) (map[string]*dnsclient.Key, error) {
	keys := map[string]*dnsclient.Key{"": nil}
	var want []string
	for _, p := range primaries {
		if p.Key != "" {
			want = append(want, p.Key)
		}
	}
	if len(want) == 0 {
		return keys, nil
	}
	path := filepath.Join(a.cfg.Paths.KeysDir, render.FileKeys)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxKeysFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxKeysFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	all, err := parseKeys(string(b), 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, name := range want {
		for _, k := range all {
			if strings.EqualFold(strings.TrimSuffix(k.name, "."), strings.TrimSuffix(name, ".")) {
				dk, err := dnsclient.NewKey(k.name, k.algorithm, k.secret)
				if err != nil {
					return nil, fmt.Errorf("key %q in %s: %w", k.name, path, err)
				}
				keys[name] = &dk
			}
		}
		if _, ok := keys[name]; !ok {
			return nil, &validate.Error{Field: "primaries.key", Reason: fmt.Sprintf("key %q is not in this pod's keys.conf", agent.BoundTo(name, 255))}
		}
	}
	return keys, nil
}

// probeTransfer asks server for zone's SOA and, unless soaOnly, starts an
// AXFR, both signed with key when there is one.
func probeTransfer(ctx context.Context, server string, key *dnsclient.Key, zone string, soaOnly bool) agent.ProbeOutcome {
	out := agent.ProbeOutcome{Server: server}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	fail := func(step string, err error) agent.ProbeOutcome {
		out.Error = agent.BoundTo(step+": "+err.Error(), agent.MaxResultErrorBytes)
		return out
	}
	c, err := dnsclient.New(server, key, dnsclient.Options{Timeout: probeTimeout})
	if err != nil {
		return fail("SOA query", err)
	}
	defer c.Close()
	serial, err := c.Serial(ctx, zone)
	if err != nil {
		return fail("SOA query", err)
	}
	if soaOnly {
		out.Serial = serial
		return out
	}
	if _, err := c.AXFREach(ctx, zone, func(dns.RR) error { return errOffered }); err != nil && !errors.Is(err, errOffered) {
		return fail("AXFR", err)
	}
	out.Serial = serial
	return out
}
