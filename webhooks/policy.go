package webhooks

import (
	"fmt"
	"net/netip"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/library"
)

// Rule is one policy rule over a parsed option statement. Expression is
// CEL and must evaluate to true when the statement is acceptable; Message
// is the rejection. Rules are data so that new ones need no new Go code.
//
// Variables: name (string), addresses, prefixes, keys (list of string) from
// the Statement; podCIDRs and podIPs (list of string) from the cluster.
// The Kubernetes ip() and cidr() libraries are available.
type Rule struct {
	Name       string
	Expression string
	Message    string
}

// restartScopedAddressStatements are the statements whose addresses end
// up in restart-scoped config and that name peers by address.
const restartScopedAddressStatements = `['allow-notify', 'also-notify', 'primaries', 'masters', 'allow-transfer', 'listen-on', 'listen-on-v6', 'server']`

// PodIPRules reject pod IPs in restart-scoped config (docs/behaviours.md,
// "No pod IP in restart-scoped config").
var PodIPRules = []Rule{{
	Name: "no-pod-ip-in-restart-scoped-options",
	Expression: `!(name in ` + restartScopedAddressStatements + `) ||
		addresses.all(a, !(a in podIPs) && !podCIDRs.exists(c, cidr(c).containsIP(ip(a))))`,
	Message: "names a pod IP (inside the cluster's pod CIDRs or the IP of a running BIND pod). " +
		"This option is restart-scoped: a pod IP in it makes every restart change the config, which rolls the pods, " +
		"which gives them new IPs, which changes the config again — a rolling-restart loop that never ends. " +
		"Name peers by TSIG key instead, e.g. `allow-notify { key \"K\"; };`, or use a stable Service ClusterIP",
}}

// PolicyEngine holds compiled rules. Compile once at start: evaluation is
// cheap, compilation is not.
type PolicyEngine struct {
	rules []compiledRule
}

type compiledRule struct {
	Rule
	prg cel.Program
}

// policyCostLimit bounds one rule evaluation. A statement is at most 1 KiB
// and pod CIDR/IP lists are small; the limit only stops a runaway rule.
const policyCostLimit = 1_000_000

// NewPolicyEngine compiles rules; an error names the rule that failed.
func NewPolicyEngine(rules []Rule) (*PolicyEngine, error) {
	env, err := cel.NewEnv(
		library.IP(), library.CIDR(),
		cel.Variable("name", cel.StringType),
		cel.Variable("addresses", cel.ListType(cel.StringType)),
		cel.Variable("prefixes", cel.ListType(cel.StringType)),
		cel.Variable("keys", cel.ListType(cel.StringType)),
		cel.Variable("podCIDRs", cel.ListType(cel.StringType)),
		cel.Variable("podIPs", cel.ListType(cel.StringType)),
	)
	if err != nil {
		return nil, err
	}
	e := &PolicyEngine{}
	for _, r := range rules {
		ast, iss := env.Compile(r.Expression)
		if iss.Err() != nil {
			return nil, fmt.Errorf("policy rule %q: %w", r.Name, iss.Err())
		}
		if ast.OutputType() != cel.BoolType {
			return nil, fmt.Errorf("policy rule %q: expression must be a bool, is %v", r.Name, ast.OutputType())
		}
		prg, err := env.Program(ast, cel.CostLimit(policyCostLimit))
		if err != nil {
			return nil, fmt.Errorf("policy rule %q: %w", r.Name, err)
		}
		e.rules = append(e.rules, compiledRule{Rule: r, prg: prg})
	}
	return e, nil
}

// PodNetwork is what the pod-IP rules compare against.
type PodNetwork struct {
	CIDRs []netip.Prefix
	IPs   []netip.Addr
}

func (n PodNetwork) vars() (cidrs, ips []string) {
	cidrs = make([]string, 0, len(n.CIDRs))
	for _, c := range n.CIDRs {
		cidrs = append(cidrs, c.Masked().String())
	}
	ips = make([]string, 0, len(n.IPs))
	for _, a := range n.IPs {
		ips = append(ips, a.WithZone("").Unmap().String())
	}
	return cidrs, ips
}

// Evaluate runs every rule over every statement. fldPath is the list the
// statements came from (e.g. spec.extraOptions); errors index into it. A
// rule that fails to evaluate rejects the statement with the evaluation
// error, rather than letting it through.
func (e *PolicyEngine) Evaluate(sts []IndexedStatement, net PodNetwork, fldPath *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	cidrs, ips := net.vars()
	var errs field.ErrorList
	for _, s := range sts {
		act := map[string]any{
			"name":      s.Statement.Name,
			"addresses": nonNil(s.Statement.Addresses),
			"prefixes":  nonNil(s.Statement.Prefixes),
			"keys":      nonNil(s.Statement.Keys),
			"podCIDRs":  cidrs,
			"podIPs":    ips,
		}
		for _, r := range e.rules {
			out, _, err := r.prg.Eval(act)
			if err != nil {
				errs = append(errs, field.Invalid(fldPath.Index(s.Index), s.Text, fmt.Sprintf("policy rule %s could not be evaluated (%v); simplify the statement", r.Name, err)))
				continue
			}
			if ok, isBool := out.Value().(bool); !isBool || !ok {
				errs = append(errs, field.Invalid(fldPath.Index(s.Index), s.Text, fmt.Sprintf("%s %s", s.Statement.Name, r.Message)))
			}
		}
	}
	return errs
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
