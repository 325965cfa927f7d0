package webhooks

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// deniedStatements are the statements extraOptions may not hold, with what
// to do instead. Three groups: statements that are not options at all and
// would escape the options block (zone, key, view...), statements that
// take over what the operator owns (files, directories, control channel,
// logging), and options that a spec field already renders, which BIND
// would reject as duplicated.
var deniedStatements = map[string]string{
	"include":             "the operator owns every file named.conf reads",
	"options":             "extraOptions already go inside the options block; write the option alone",
	"zone":                "create a BindZone instead",
	"view":                "create a BindView instead",
	"acl":                 "create a BindACL instead",
	"key":                 "create a BindTSIGKey instead",
	"server":              "name servers through BindZone primaries with keyRef instead",
	"masters":             "set BindZone spec.primaries instead",
	"primaries":           "set BindZone spec.primaries instead",
	"parental-agents":     "it is a top-level statement and cannot go in the options block",
	"remote-servers":      "it is a top-level statement and cannot go in the options block",
	"controls":            "the operator owns the control channel",
	"statistics-channels": "the operator owns the statistics channel (the agent exports metrics)",
	"logging":             "the operator owns logging; use spec.queryLog for query logs",
	"dnssec-policy":       "create a BindDNSSECPolicy and reference it from the zone",
	"tls":                 "the operator owns TLS configuration",
	"http":                "the operator owns HTTP endpoints",
	"plugin":              "plugins load code into named and are not allowed",
	"dyndb":               "dyndb loads code into named and is not allowed",
	"trust-anchors":       "it is a top-level statement and cannot go in the options block",
	"managed-keys":        "it is a top-level statement and cannot go in the options block",
	"trusted-keys":        "it is a top-level statement and cannot go in the options block",
	"catalog-zones":       "create a BindCatalogZone instead",
	"response-policy":     "create a BindPolicy instead",
	"allow-new-zones":     "the operator enables it where it adds zones at runtime",
	"directory":           "the operator owns named's directories",
	"key-directory":       "the operator owns named's directories",
	"pid-file":            "the operator owns named's files",
	"allow-query":         "set spec.allowQuery instead",
	"recursion":           "set spec.mode (Resolver) instead",
	"allow-recursion":     "set spec.recursion.allowRecursion instead",
	"forwarders":          "set spec.recursion.forwarders instead",
	"forward":             "set spec.recursion.forwardPolicy instead",
	"dnssec-validation":   "set spec.recursion.dnssecValidation instead",
	"querylog":            "set spec.queryLog instead",
	"notify-delay":        "set spec.tuning.notifyDelay instead",
	"notify-rate":         "set spec.tuning.notifyRate instead",
	"startup-notify-rate": "set spec.tuning.startupNotifyRate instead",
	"serial-query-rate":   "set spec.tuning.serialQueryRate instead",
}

// deniedReason says why name may not appear in extraOptions, or "".
// Every option naming a file or directory is the operator's: a user path
// could overwrite files named can write or read secrets it should not.
func deniedReason(name string) string {
	if r, ok := deniedStatements[name]; ok {
		return r
	}
	if strings.HasSuffix(name, "-file") || strings.HasSuffix(name, "-directory") || strings.HasSuffix(name, "-keyfile") {
		return "the operator owns named's files and directories"
	}
	return ""
}

// ValidateOptionStatement checks one free-text option statement: one
// statement, well formed, and not one the operator owns.
func ValidateOptionStatement(s string, fldPath *field.Path) (Statement, field.ErrorList) {
	st, err := ParseStatement(s)
	if err != nil {
		return st, field.ErrorList{field.Invalid(fldPath, s, err.Error())}
	}
	if r := deniedReason(st.Name); r != "" {
		return st, field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf("%q cannot be set in extraOptions: %s", st.Name, r))}
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
