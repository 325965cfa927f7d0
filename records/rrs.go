package records

import (
	"fmt"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// ToRRs turns a record set into the dns.RR that an RFC 2136 UPDATE adds.
// A set without a TTL gets v1alpha1.DefaultTTL; callers pass canonical sets, whose
// TTL the webhook has filled.
func ToRRs(zone string, set v1alpha1.RecordSet) ([]dns.RR, error) {
	ttl := uint32(v1alpha1.DefaultTTL)
	if set.TTL != nil {
		ttl = uint32(*set.TTL)
	}
	rrs := make([]dns.RR, 0, len(set.Values))
	for i, v := range set.Values {
		rr, err := ParseRR(zone, string(set.Name), string(set.Type), ttl, v)
		if err != nil {
			return nil, fmt.Errorf("%s %s value %d: %w", set.Name, set.Type, i, err)
		}
		rrs = append(rrs, rr)
	}
	return rrs, nil
}
