package webhooks

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
)

// DefaultConfigCheckTimeout bounds one named-checkconf run at admission;
// the webhooks' timeoutSeconds is 10.
const DefaultConfigCheckTimeout = 4 * time.Second

// configCheckConcurrency bounds parallel named-checkconf processes, so a
// burst of BindCluster writes cannot fork without limit.
const configCheckConcurrency = 4

// ConfigChecker runs named-checkconf on a BindCluster's candidate render
// at admission, so an option statement BIND rejects is a `kubectl apply`
// error in named's own words. The candidate is the cluster alone (no zones,
// views or policies; referenced ACLs and keys stubbed): the controller checks
// the full render again before any roll.
type ConfigChecker struct {
	// NamedCheckconf is the binary; empty disables the check.
	NamedCheckconf string
	// Timeout bounds one check; zero: DefaultConfigCheckTimeout.
	Timeout time.Duration
	sem     chan struct{}
}

// NewConfigChecker returns a checker running bin, or nil when bin is empty.
func NewConfigChecker(bin string, timeout time.Duration) *ConfigChecker {
	if bin == "" {
		return nil
	}
	if timeout <= 0 {
		timeout = DefaultConfigCheckTimeout
	}
	return &ConfigChecker{NamedCheckconf: bin, Timeout: timeout, sem: make(chan struct{}, configCheckConcurrency)}
}

// renderRelevant is the part of a BindClusterSpec that reaches named.conf.
// Image, replicas, scheduling, storage and Services do not: a change to
// only those is not checked again.
type renderRelevant struct {
	Mode           v1alpha1.ClusterMode
	Ports          v1alpha1.ClusterPorts
	TransferKeyRef *v1alpha1.LocalObjectReference
	AllowQuery     []v1alpha1.AddressMatchElement
	Recursion      *v1alpha1.RecursionSpec
	Tuning         v1alpha1.ReplicationTuning
	ExtraOptions   []string
	QueryLog       bool
}

func relevant(s *v1alpha1.BindClusterSpec) renderRelevant {
	return renderRelevant{s.Mode, s.Ports, s.TransferKeyRef, s.AllowQuery, s.Recursion, s.Tuning, s.ExtraOptions, s.QueryLog}
}

// RenderChanged reports whether an update changes what the cluster
// renders; a create (old nil) always does.
func RenderChanged(old, cur *v1alpha1.BindCluster) bool {
	return old == nil || !reflect.DeepEqual(relevant(&old.Spec), relevant(&cur.Spec))
}

// stubSecret is key material for referenced keys in the candidate: the
// check is about the config's grammar, not the keys'.
var stubSecret = base64.StdEncoding.EncodeToString(make([]byte, 32))

// candidate is the render input for c alone, with every ACL and key it
// references stubbed (a missing reference is a warning at admission, not
// an error, so the check must not depend on them).
func candidate(c *v1alpha1.BindCluster) render.Input {
	in := render.Input{
		Cluster:        c,
		PrimaryAddress: "192.0.2.53",
		ControlKey:     render.TSIGKey{Name: "bind-operator-admission-check", Algorithm: string(v1alpha1.TSIGHMACSHA256), Secret: stubSecret},
		Keys:           map[string]render.TSIGKey{},
	}
	acls := map[string]bool{}
	addKey := func(name string) {
		if name != "" {
			in.Keys[name] = render.TSIGKey{Name: name, Algorithm: string(v1alpha1.TSIGHMACSHA256), Secret: stubSecret}
		}
	}
	walk := func(l []v1alpha1.AddressMatchElement) {
		for _, e := range l {
			addKey(e.KeyRef)
			if e.ACLRef != "" && !acls[e.ACLRef] {
				acls[e.ACLRef] = true
				in.ACLs = append(in.ACLs, v1alpha1.BindACL{ObjectMeta: metav1.ObjectMeta{Name: e.ACLRef, Namespace: c.Namespace}, Spec: v1alpha1.BindACLSpec{Entries: []v1alpha1.AddressMatchElement{{Builtin: v1alpha1.BuiltinNone}}}})
			}
		}
	}
	walk(c.Spec.AllowQuery)
	if c.Spec.Recursion != nil {
		walk(c.Spec.Recursion.AllowRecursion)
	}
	if c.Spec.TransferKeyRef != nil {
		addKey(c.Spec.TransferKeyRef.Name)
	}
	return in
}

// Check runs named-checkconf on c's candidate render. A rejection is an
// error at the extraOptions item on the line named complains about (the
// only free text that reaches named.conf), in named's words; a check that
// cannot run in time is a warning, since the controller checks every render
// again before it rolls.
func (k *ConfigChecker) Check(ctx context.Context, c *v1alpha1.BindCluster, warns *admission.Warnings) field.ErrorList {
	if k == nil || k.NamedCheckconf == "" {
		return nil
	}
	in := candidate(c)
	res, err := render.Render(in)
	if err != nil {
		// The cluster alone cannot be rendered: nothing else is involved.
		return field.ErrorList{field.Invalid(field.NewPath("spec"), "", fmt.Sprintf("the cluster's configuration cannot be rendered: %v", err))}
	}
	ce := k.run(ctx, in, warns)
	if ce == nil {
		return nil
	}
	msg := fmt.Sprintf("BIND refuses this configuration; named-checkconf says %q. Fix or remove the statement it names", ce.Output)
	if i, ok := itemAt(res.ConfigData[ce.File], ce, c.Spec.ExtraOptions); ok {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "extraOptions").Index(i), c.Spec.ExtraOptions[i], msg)}
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec"), "", msg)}
}

// CheckDNSSECPolicy runs named-checkconf on a config that holds only the
// policy (used by one stub zone). BIND refuses combinations no single field
// rule sees, such as a key lifetime shorter than one rollover under the
// policy's TTLs and safety margins, and this makes them a `kubectl apply`
// error instead of a render every cluster using the policy refuses. The
// error is at spec.keys when named's words are about a key, else at spec.
func (k *ConfigChecker) CheckDNSSECPolicy(ctx context.Context, p *v1alpha1.BindDNSSECPolicy, warns *admission.Warnings) field.ErrorList {
	if k == nil || k.NamedCheckconf == "" {
		return nil
	}
	in := candidate(&v1alpha1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: "admission-check", Namespace: p.Namespace}, Spec: v1alpha1.BindClusterSpec{Mode: v1alpha1.ModeAuthoritative}})
	in.DNSSECPolicies = []v1alpha1.BindDNSSECPolicy{*p}
	in.Zones = []v1alpha1.BindZone{{ObjectMeta: metav1.ObjectMeta{Name: "admission-check", Namespace: p.Namespace}, Spec: v1alpha1.BindZoneSpec{
		ClusterRef: v1alpha1.LocalObjectReference{Name: "admission-check"}, ZoneName: "admission-check.invalid", Type: v1alpha1.ZonePrimary,
		DNSSECPolicyRef: &v1alpha1.LocalObjectReference{Name: p.Name},
	}}}
	if _, err := render.Render(in); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec"), "", fmt.Sprintf("the policy cannot be rendered: %v", err))}
	}
	ce := k.run(ctx, in, warns)
	if ce == nil {
		return nil
	}
	path := field.NewPath("spec")
	if strings.Contains(ce.Output, "key") || strings.Contains(ce.Output, "lifetime") {
		path = path.Child("keys")
	}
	return field.ErrorList{field.Invalid(path, "", fmt.Sprintf("BIND refuses this policy; named-checkconf says %q. Lengthen the key lifetime or shorten the TTLs and safety margins it names", ce.Output))}
}

// run checks in's render with named-checkconf, bounded in time and in
// parallel runs. It returns BIND's refusal, or nil when the config passed
// or could not be checked (then with a warning: the controller checks every
// render again before it rolls).
func (k *ConfigChecker) run(ctx context.Context, in render.Input, warns *admission.Warnings) *render.CheckError {
	ctx, cancel := context.WithTimeout(ctx, k.Timeout)
	defer cancel()
	select {
	case k.sem <- struct{}{}:
		defer func() { <-k.sem }()
	case <-ctx.Done():
		*warns = append(*warns, "the named-checkconf check of this configuration was skipped (too many at once); the operator checks it again before it rolls")
		return nil
	}
	_, err := render.CheckOutput(ctx, in, k.NamedCheckconf)
	var ce *render.CheckError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		*warns = append(*warns, fmt.Sprintf("the named-checkconf check of this configuration did not finish within %s; the operator checks it again before it rolls", k.Timeout))
		return nil
	case errors.As(err, &ce):
		return ce
	default:
		*warns = append(*warns, fmt.Sprintf("the configuration could not be checked with named-checkconf: %v", err))
		return nil
	}
}

var lineRef = regexp.MustCompile(`named\.conf\.\w+:(\d+):`)

// itemAt finds the extraOptions item on the line of conf that named's
// complaint names.
func itemAt(conf string, ce *render.CheckError, items []string) (int, bool) {
	m := lineRef.FindStringSubmatch(ce.Output)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(conf, "\n")
	if n < 1 || n > len(lines) {
		return 0, false
	}
	line := strings.TrimSpace(lines[n-1])
	for i, it := range items {
		if strings.TrimSpace(it) == line {
			return i, true
		}
	}
	return 0, false
}
