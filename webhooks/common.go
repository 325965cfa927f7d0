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
// host bits (BIND refuses 10.0.0.1/8) and no duplicate elements.
func ValidateAddressMatchList(l []v1alpha1.AddressMatchElement, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[v1alpha1.AddressMatchElement]bool{}
	for i, e := range l {
		p := fldPath.Index(i)
		if e.Address != "" {
			if pf, err := netip.ParsePrefix(e.Address); err == nil && pf.Masked() != pf {
				errs = append(errs, field.Invalid(p.Child("address"), e.Address, fmt.Sprintf("the prefix has host bits set; BIND refuses it, write %s", pf.Masked())))
			} else if _, aerr := netip.ParseAddr(e.Address); aerr != nil && err != nil {
				errs = append(errs, field.Invalid(p.Child("address"), e.Address, "must be an IP address or a CIDR prefix such as 10.0.0.0/8"))
			}
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

// ValidateDomainName checks a domain name (zone, key or server name) and
// says what a valid one looks like.
func ValidateDomainName(name string, fldPath *field.Path) field.ErrorList {
	fq := records.ZoneFQDN(name)
	if n, ok := isDomainName(fq); !ok || n > 127 || len(fq) > 254 {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a domain name such as example.com: labels of letters, digits, hyphens and underscores, at most 63 characters each and 253 in all")}
	}
	return nil
}

// ValidateForwarders rejects the same forwarder twice.
func ValidateForwarders(fs []v1alpha1.Forwarder, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, f := range fs {
		port := int32(53)
		if f.Port != nil {
			port = *f.Port
		}
		k := fmt.Sprintf("%s#%d", canonicalAddress(f.Address), port)
		if seen[k] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), k))
		}
		seen[k] = true
	}
	return errs
}

// ValidateRemoteServers rejects the same server twice.
func ValidateRemoteServers(rs []v1alpha1.RemoteServer, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, r := range rs {
		port := int32(53)
		if r.Port != nil {
			port = *r.Port
		}
		k := fmt.Sprintf("%s#%d", canonicalAddress(r.Address), port)
		if seen[k] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), k))
		}
		seen[k] = true
	}
	return errs
}

func defaultForwarders(fs []v1alpha1.Forwarder) {
	for i := range fs {
		fs[i].Address = canonicalAddress(fs[i].Address)
	}
}

func defaultRemoteServers(rs []v1alpha1.RemoteServer) {
	for i := range rs {
		rs[i].Address = canonicalAddress(rs[i].Address)
	}
}

// immutable re-checks a field the CRD already guards with a CEL rule, so
// that the message is ours even when the CEL rule cannot fire (a field
// cleared on update).
func immutable(oldV, newV string, fldPath *field.Path, what string) field.ErrorList {
	if oldV != "" && oldV != newV {
		return field.ErrorList{field.Invalid(fldPath, newV, fmt.Sprintf("%s is immutable (was %q); %s", fldPath.String(), oldV, what))}
	}
	return nil
}
