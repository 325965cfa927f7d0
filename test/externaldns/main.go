// Command edns runs one synchronisation of external-dns, with external-dns'
// own code (provider/rfc2136, registry/txt, plan, endpoint of
// sigs.k8s.io/external-dns), the way its controller's RunOnce does: list
// the zone through the registry, plan the desired endpoints against it
// under the configured policy, apply the changes.
//
// It is a separate module because external-dns needs the Go 1.27
// toolchain and modules the main module does not want (docs/testing.md).
// The e2e tests build it with GOTOOLCHAIN=go1.27.3 and run it against a
// BindZone, as a user's external-dns Deployment would.
//
// Usage: edns <external-dns flags...> < desired.json
//
// The flags are external-dns' own, parsed by its own parser, so every
// default is external-dns' (EXTERNAL_DNS_* environment variables work as in
// its Deployment, e.g. EXTERNAL_DNS_RFC2136_TSIG_SECRET). Standard input is
// a JSON array of endpoints (endpoint.Endpoint); standard output is the JSON
// of the changes applied (plan.Changes).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns"
	"sigs.k8s.io/external-dns/plan"
	"sigs.k8s.io/external-dns/provider/rfc2136"
	"sigs.k8s.io/external-dns/registry/txt"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "edns:", err)
		os.Exit(1)
	}
}

func run(args []string, in io.Reader, out io.Writer) error {
	cfg := externaldns.NewConfig()
	if err := cfg.ParseFlags(args); err != nil {
		return fmt.Errorf("flags: %w", err)
	}
	policy, ok := plan.Policies[cfg.Policy]
	if !ok {
		return fmt.Errorf("unknown --policy %q", cfg.Policy)
	}
	var desired []*endpoint.Endpoint
	if err := json.NewDecoder(io.LimitReader(in, 1<<20)).Decode(&desired); err != nil {
		return fmt.Errorf("desired endpoints on standard input: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	domains := endpoint.NewDomainFilter(cfg.DomainFilter)
	p, err := rfc2136.New(ctx, cfg, domains)
	if err != nil {
		return fmt.Errorf("rfc2136 provider: %w", err)
	}
	reg, err := txt.New(cfg, p)
	if err != nil {
		return fmt.Errorf("txt registry: %w", err)
	}
	current, err := reg.Records(ctx)
	if err != nil {
		return fmt.Errorf("listing the zone: %w", err)
	}
	adjusted, err := reg.AdjustEndpoints(desired)
	if err != nil {
		return fmt.Errorf("adjusting endpoints: %w", err)
	}
	pl := (&plan.Plan{
		Policies:       []plan.Policy{policy},
		Current:        current,
		Desired:        adjusted,
		DomainFilter:   endpoint.MatchAllDomainFilters{domains, reg.GetDomainFilter()},
		ManagedRecords: cfg.ManagedDNSRecordTypes,
		ExcludeRecords: cfg.ExcludeDNSRecordTypes,
		OwnerID:        reg.OwnerID(),
		OldOwnerID:     cfg.TXTOwnerOld,
	}).Calculate()
	if pl.Changes.HasChanges() {
		if err := reg.ApplyChanges(ctx, pl.Changes); err != nil {
			return fmt.Errorf("applying changes: %w", err)
		}
	}
	return json.NewEncoder(out).Encode(pl.Changes)
}
