package webhooks

import "github.com/miekg/dns"

// isDomainName wraps dns.IsDomainName so the rest of the package does not
// depend on miekg/dns' argument conventions.
func isDomainName(fqdn string) (int, bool) { return dns.IsDomainName(fqdn) }
