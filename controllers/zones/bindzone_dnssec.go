package zones

import (
	"context"
	"slices"

	"github.com/miekg/dns"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/records"
)

// maxDS bounds status.dnssec.ds, as the CRD does: a zone has one or two
// key-signing keys, a few more during a rollover.
const maxDS = 8

// observeDNSSEC fills status.dnssec for a zone a BindDNSSECPolicy signs:
// the DS records its parent needs, one per key-signing key (SEP flag: KSK
// or CSK) the primary publishes, with SHA-256 digests (RFC 4509). The keys
// come from the primary's answer, so a rollover shows up as it happens.
// Best effort: a failed query leaves the last answer.
func (r *BindZoneReconciler) observeDNSSEC(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget, status *bindv1alpha1.BindZoneStatus) {
	if zone.Spec.DNSSECPolicyRef == nil {
		status.DNSSEC = nil
		return
	}
	rrs, err := clusterpods.ServedRRs(ctx, t.srv.Addr, t.srv.ReadKey(), records.ZoneFQDN(t.zoneName), dns.TypeDNSKEY)
	if err != nil {
		return
	}
	ds := []string{}
	for _, rr := range rrs {
		key, ok := rr.(*dns.DNSKEY)
		if !ok || key.Flags&dns.SEP == 0 {
			continue
		}
		if d := key.ToDS(dns.SHA256); d != nil {
			ds = append(ds, records.Rdata(d))
		}
	}
	slices.Sort(ds)
	if len(ds) > maxDS {
		ds = ds[:maxDS]
	}
	keys := ""
	if status.DNSSEC != nil {
		keys = status.DNSSEC.KeysSecret
	}
	status.DNSSEC = &bindv1alpha1.ZoneDNSSECStatus{DS: ds, KeysSecret: keys}
}
