package webhooks

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// specFieldStatements are statements a spec field renders, with the field
// to set instead. They are not on the allowlist (BIND would reject them as
// duplicated); the hint is only a better sentence than the generic one.
var specFieldStatements = map[string]string{
	"allow-query":             "set spec.allowQuery instead",
	"recursion":               "set spec.mode (Resolver) instead",
	"allow-recursion":         "set spec.recursion.allowRecursion instead",
	"forwarders":              "set spec.recursion.forwarders instead",
	"forward":                 "set spec.recursion.forwardPolicy instead",
	"dnssec-validation":       "set spec.recursion.dnssecValidation instead",
	"querylog":                "set spec.queryLog instead",
	"notify-delay":            "set spec.tuning.notifyDelay instead",
	"notify-rate":             "set spec.tuning.notifyRate instead",
	"startup-notify-rate":     "set spec.tuning.startupNotifyRate instead",
	"serial-query-rate":       "set spec.tuning.serialQueryRate instead",
	"allow-update":            "dynamic updates are per zone: set BindZone spec.updateKeyRef to a BindTSIGKey",
	"allow-update-forwarding": "dynamic updates are per zone: set BindZone spec.updateKeyRef to a BindTSIGKey",
	"allow-transfer":          "the operator allows transfers by TSIG key only; secondaries get zones through the cluster's transfer key",
	"zone":                    "create a BindZone instead",
	"view":                    "create a BindView instead",
	"acl":                     "create a BindACL instead",
	"key":                     "create a BindTSIGKey instead",
	"dnssec-policy":           "create a BindDNSSECPolicy and reference it from the zone",
	"catalog-zones":           "create a BindCatalogZone instead",
	"response-policy":         "create a BindPolicy instead",
	"primaries":               "set BindZone spec.primaries instead",
	"masters":                 "set BindZone spec.primaries instead",
	"options":                 "extraOptions already go inside the options block; write the option alone",
}

// OperatorOwned says whether the statement is one of those the operator
// sets itself in every cluster — the addresses and ports named listens on
// or sends from, every file and directory it uses — and why. The importer
// reports such statements of an existing server as replaced, not lost.
func OperatorOwned(name string) (string, bool) {
	switch {
	case strings.HasPrefix(name, "listen-on") || strings.HasSuffix(name, "-source") || strings.HasSuffix(name, "-source-v6") || name == "port" || name == "controls" || name == "statistics-channels" || name == "http" || name == "tls":
		return "the operator owns every address and port named listens on or sends from (spec.ports for DNS; the control and statistics channels are the agent's)", true
	case strings.HasSuffix(name, "-file") || strings.HasSuffix(name, "-directory") || strings.HasSuffix(name, "-keyfile") || name == "directory" || name == "include" || name == "dump-file" || name == "bindkeys-file":
		return "it names a file or directory, and the operator owns every file named reads or writes", true
	}
	return "", false
}

// refusedReason says why a statement that is not on the allowlist is
// refused, in words for the kind of statement it is.
func refusedReason(name string) string {
	if r, ok := specFieldStatements[name]; ok {
		return r
	}
	switch {
	case strings.HasPrefix(name, "dnstap"):
		return "dnstap writes every query to a file or socket the statement names; the operator owns every file and socket named uses"
	case strings.HasPrefix(name, "tkey-"):
		return "TKEY names key material and keytabs on disk; keys come only from BindTSIGKeys"
	}
	if r, ok := OperatorOwned(name); ok {
		return r
	}
	switch {
	case strings.HasPrefix(name, "allow-") || strings.HasPrefix(name, "blackhole") || strings.HasPrefix(name, "deny-"):
		return "access control is rendered by the operator from spec fields and TSIG keys"
	case name == "plugin" || name == "dyndb":
		return "it loads code into named"
	}
	return "it is not on the allowlist of extraOptions statements"
}

// allowedNames is the allowlist's names, sorted, for error messages.
var allowedNames = slices.Sorted(maps.Keys(v1alpha1.AllowedExtraOptions))

// ValidateOptionStatement checks one free-text option statement: one
// statement, well formed, and on the allowlist
// (v1alpha1.AllowedExtraOptions).
func ValidateOptionStatement(s string, fldPath *field.Path) (Statement, field.ErrorList) {
	st, err := ParseStatement(s)
	if err != nil {
		return st, field.ErrorList{field.Invalid(fldPath, s, err.Error())}
	}
	if _, ok := v1alpha1.AllowedExtraOptions[st.Name]; !ok {
		return st, field.ErrorList{field.Invalid(fldPath, s, fmt.Sprintf(
			"%q cannot be set in extraOptions: %s. extraOptions admit only tuning statements that name no file, address, port, key or access rule: %s",
			st.Name, refusedReason(st.Name), strings.Join(allowedNames, ", ")))}
	}
	return st, nil
}

// ValidateExtraOptions checks every item and returns the parsed statements
// of the valid ones with their indexes, for the CEL policy rules.
func ValidateExtraOptions(opts []string, fldPath *field.Path) ([]IndexedStatement, field.ErrorList) {
	var errs field.ErrorList
	var sts []IndexedStatement
	seen := map[string]int{}
	for i, o := range opts {
		p := fldPath.Index(i)
		st, e := ValidateOptionStatement(o, p)
		if len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		if j, dup := seen[st.Name]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s (already set in item %d); BIND accepts each option once, merge them", st.Name, j)))
			continue
		}
		seen[st.Name] = i
		sts = append(sts, IndexedStatement{Index: i, Statement: st, Text: o})
	}
	return sts, errs
}

// IndexedStatement is a parsed statement and where it came from.
type IndexedStatement struct {
	Index     int
	Statement Statement
	Text      string
}
