package webhooks

import (
	"fmt"
	"net/netip"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// invalid is the one shape of a rejection: 422 with every field error.
func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}

// canonicalAddress rewrites an address or prefix in its shortest standard
// spelling (IPv6 compressed and lowercase) without changing its meaning:
// host bits of a prefix are kept so that validation can reject them.
func canonicalAddress(s string) string {
	t := strings.TrimSpace(s)
	if a, err := netip.ParseAddr(t); err == nil {
		return a.String()
	}
	if p, err := netip.ParsePrefix(t); err == nil {
		return p.Addr().String() + "/" + fmt.Sprint(p.Bits())
	}
	return s
}

func defaultAddressList(l []v1alpha1.AddressMatchElement) {
	for i := range l {
		if l[i].Address != "" {
			l[i].Address = canonicalAddress(l[i].Address)
		}
	}
}

// ValidateAddressMatchList checks what the CRD cannot: prefixes without
// host bits (BIND refuses 10.0.0.1/8) and no duplicate elements. That an
// address is an IP address or prefix at all is the CRD's rule.
func ValidateAddressMatchList(l []v1alpha1.AddressMatchElement, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[v1alpha1.AddressMatchElement]bool{}
	for i, e := range l {
		p := fldPath.Index(i)
		if pf, err := netip.ParsePrefix(e.Address); err == nil && pf.Masked() != pf {
			errs = append(errs, field.Invalid(p.Child("address"), e.Address, fmt.Sprintf("the prefix has host bits set; BIND refuses it, write %s", pf.Masked())))
		}
		if seen[e] {
			errs = append(errs, field.Duplicate(p, describeElement(e)))
		}
		seen[e] = true
	}
	return errs
}

func describeElement(e v1alpha1.AddressMatchElement) string {
	s := e.Address + e.ACLRef + e.KeyRef + string(e.Builtin)
	if e.Negate {
		return "!" + s
	}
	return s
}

// ValidateDomainName checks a name that is not a DomainName field (whose
// length the CRD checks), e.g. a response policy rule's match, and says
// what a valid one looks like.
func ValidateDomainName(name string, fldPath *field.Path) field.ErrorList {
	fq := records.ZoneFQDN(name)
	if n, ok := isDomainName(fq); !ok || n > 127 || len(fq) > v1alpha1.MaxDomainNameLength+1 {
		return field.ErrorList{field.Invalid(fldPath, name, fmt.Sprintf("must be a domain name such as example.com: labels of letters, digits, hyphens and underscores, at most %d characters each and %d in all", v1alpha1.MaxLabelLength, v1alpha1.MaxDomainNameLength))}
	}
	return nil
}

// ValidateServers rejects the same server (forwarder, primary) twice: the
// same address, however spelled, and port.
func ValidateServers[S interface{ AddressPort() (string, int32) }](servers []S, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range servers {
		addr, port := s.AddressPort()
		k := fmt.Sprintf("%s#%d", canonicalAddress(addr), port)
		if seen[k] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), k))
		}
		seen[k] = true
	}
	return errs
}

// ValidateForwarderTargets refuses a forwarder that names the cluster
// doing the forwarding: its queries would come back to itself until they
// time out.
func ValidateForwarderTargets(fw []v1alpha1.Forwarder, self string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range fw {
		if f.ClusterRef != nil && f.ClusterRef.Name == self {
			errs = append(errs, field.Invalid(fldPath.Index(i).Child("clusterRef", "name"), self,
				"names the BindCluster that would do the forwarding, so queries would loop back to it; name the cluster that serves the zone"))
		}
	}
	return errs
}

func defaultForwarders(fs []v1alpha1.Forwarder) {
	for i := range fs {
		if fs[i].Address != "" {
			fs[i].Address = canonicalAddress(fs[i].Address)
		}
	}
}

func defaultRemoteServers(rs []v1alpha1.RemoteServer) {
	for i := range rs {
		rs[i].Address = canonicalAddress(rs[i].Address)
	}
}
