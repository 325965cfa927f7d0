package clusterpods

import (
	"context"
	"crypto/sha1" //nolint:gosec // a label, not a security boundary: the RFC 9432 convention
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/records"
)

// CatalogMemberLabel is the RFC 9432 unique label of a member zone: the
// lowercase hex SHA-1 of the zone name in DNS wire format (lowercase,
// absolute). RFC 9432 lets the producer pick any label unique within the
// catalog and BIND accepts any; this one is stable (the same zone always
// gets the same label, so re-adding is idempotent and two operators agree)
// and it is the convention of other catalog producers (e.g. Knot DNS).
func CatalogMemberLabel(zone string) string {
	name := records.ZoneFQDN(zone)
	buf := make([]byte, 256)
	n, err := dns.PackDomainName(name, buf, 0, nil, false)
	if err != nil {
		// A zone name that does not pack cannot be a member; hash the
		// text so the label is still deterministic.
		sum := sha1.Sum([]byte(name)) //nolint:gosec
		return hex.EncodeToString(sum[:])
	}
	sum := sha1.Sum(buf[:n]) //nolint:gosec
	return hex.EncodeToString(sum[:])
}

// CatalogMemberOwner is the owner of a member's PTR in the catalog:
// <label>.zones.<catalog>.
func CatalogMemberOwner(catalog, zone string) string {
	return CatalogMemberLabel(zone) + ".zones." + records.ZoneFQDN(catalog)
}

// CatalogMembers extracts the member zones (sorted, canonical, without the
// trailing dot) from a catalog's records. Anything that is not a PTR
// directly under zones.<catalog> is ignored: the records come from a
// transfer and are untrusted.
func CatalogMembers(catalog string, rrs []dns.RR) []string {
	suffix := ".zones." + records.ZoneFQDN(catalog)
	seen := map[string]bool{}
	for _, rr := range rrs {
		ptr, ok := rr.(*dns.PTR)
		if !ok {
			continue
		}
		owner := strings.ToLower(ptr.Hdr.Name)
		if !strings.HasSuffix(owner, suffix) || strings.Contains(strings.TrimSuffix(owner, suffix), ".") {
			continue
		}
		seen[records.CanonicalZone(ptr.Ptr)] = true
	}
	return sortedSet(seen)
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// NotifySecondaries sends a NOTIFY for zone, TSIG-signed with key, to every
// secondary. The catalog zone is declared in named.conf, where pod IPs may
// never appear (docs/behaviours.md, "No pod IP in restart-scoped config"),
// so the primary cannot also-notify the secondaries for it; the operator,
// which holds K, tells them instead. The secondaries accept it through
// allow-notify { key K; } and then query and transfer from the primary
// Service as usual. Best effort: the SOA refresh is the fallback.
func NotifySecondaries(ctx context.Context, pods []PodEndpoint, zone string, key dnsclient.Key) error {
	var errs []error
	for _, p := range pods {
		if p.Primary {
			continue
		}
		c, err := dnsclient.New(p.DNSAddr, &key, dnsclient.Options{Timeout: 5 * time.Second})
		if err != nil {
			return err
		}
		if err := c.Notify(ctx, zone); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Pod, err))
		}
		_ = c.Close()
	}
	return errors.Join(errs...)
}
