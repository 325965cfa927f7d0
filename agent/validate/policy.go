package validate

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// policyActions are the CNAME targets that say an RPZ action rather than
// name a redirect.
var policyActions = map[string]bool{".": true, "*.": true, "rpz-passthru.": true, "rpz-drop.": true, "rpz-tcp-only.": true}

// PolicyName checks the BindPolicy name a policy request carries for the
// zone file's header: a Kubernetes object name.
func PolicyName(name string) error {
	if name == "" {
		return fail("policy", "name is empty")
	}
	return objectName("policy", name, validation.DNS1123SubdomainMaxLength)
}

// PolicyRecords checks the records of a policy request: at most
// agent.MaxPolicyRecords, each owner a relative name of RPZ's alphabet
// (letters, digits, '-', '_' and '*' labels; IP triggers are digits and
// "zz" under rpz-client-ip, rpz-ip or rpz-nsip) appearing once, each
// target an RPZ action or an absolute name to redirect to. They become
// zone file lines, so nothing else may pass.
func PolicyRecords(recs []agent.PolicyRecord) error {
	if len(recs) > agent.MaxPolicyRecords {
		return fail("records", "%d records, the limit is %d", len(recs), agent.MaxPolicyRecords)
	}
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		if err := policyName("records.owner", r.Owner, "-_*"); err != nil {
			return err
		}
		if seen[r.Owner] {
			return fail("records.owner", "%q appears twice; a policy zone holds one action per owner", clip(r.Owner))
		}
		seen[r.Owner] = true
		if policyActions[r.Target] {
			continue
		}
		name, ok := strings.CutSuffix(r.Target, ".")
		if !ok {
			return fail("records.target", "%q is neither an RPZ action nor an absolute name ending in '.'", clip(r.Target))
		}
		if err := policyName("records.target", name, "-_"); err != nil {
			return err
		}
	}
	return nil
}

// policyName checks a relative name made of lowercase letters, digits and
// the extra characters given.
func policyName(field, name, extra string) error {
	if name == "" || len(name) > v1alpha1.MaxDomainNameLength {
		return fail(field, "name must be 1 to %d characters long", v1alpha1.MaxDomainNameLength)
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > v1alpha1.MaxLabelLength {
			return fail(field, "%q has an empty label or one longer than %d characters", clip(name), v1alpha1.MaxLabelLength)
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !isLowerAlnum(c) && !strings.ContainsRune(extra, rune(c)) {
				return fail(field, "%q contains %q", clip(name), rune(c))
			}
		}
	}
	return nil
}
