package webhooks

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestParseStatement(t *testing.T) {
	st, err := ParseStatement(`also-notify { 198.18.0.1 key "xfr"; 2001:DB8::1 port 5353; ::ffff:10.0.0.1; 10.1.0.0/16; };`)
	if err != nil {
		t.Fatal(err)
	}
	want := Statement{Name: "also-notify", Addresses: []string{"198.18.0.1", "2001:db8::1", "10.0.0.1"}, Prefixes: []string{"10.1.0.0/16"}, Keys: []string{"xfr"}}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("got %+v want %+v", st, want)
	}
}

// refusal is the exact error for a statement that is not on the allowlist.
func refusal(p *field.Path, in, name, why string) field.ErrorList {
	return field.ErrorList{field.Invalid(p, in, fmt.Sprintf(
		"%q cannot be set in extraOptions: %s. extraOptions admit only tuning statements that name no file, address, port, key or access rule: %s",
		name, why, strings.Join(allowedNames, ", ")))}
}

func TestValidateOptionStatement(t *testing.T) {
	p := field.NewPath("spec", "extraOptions").Index(0)
	invalid := func(in, msg string) field.ErrorList { return field.ErrorList{field.Invalid(p, in, msg)} }
	refused := func(in, name, why string) field.ErrorList { return refusal(p, in, name, why) }
	const (
		outside   = " is not allowed outside quotes; write names, numbers, addresses, `{`, `}`, `;`, `!` and quoted strings"
		files     = "it names a file or directory, and the operator owns every file named reads or writes"
		listeners = "the operator owns every address and port named listens on or sends from (spec.ports for DNS; the control and statistics channels are the agent's)"
		access    = "access control is rendered by the operator from spec fields and TSIG keys"
		dnstap    = "dnstap writes every query to a file or socket the statement names; the operator owns every file and socket named uses"
		tkey      = "TKEY names key material and keytabs on disk; keys come only from BindTSIGKeys"
		notListed = "it is not on the allowlist of extraOptions statements"
	)
	for _, tc := range []struct {
		in   string
		want field.ErrorList
	}{
		// Allowed: tuning knobs, whatever their argument shape.
		{`minimal-responses yes;`, nil},
		{`MAX-CACHE-SIZE 256m;`, nil},
		{"rate-limit {\n responses-per-second 10;\n window 5;\n};", nil},
		{`check-names primary warn;`, nil},
		{`version none;`, nil},
		{`prefetch 2 9;`, nil},
		// Malformed text, whatever the statement.
		{`minimal-responses yes`, invalid(`minimal-responses yes`, "a statement must end with `;`, e.g. `minimal-responses yes;`")},
		{`a yes; b no;`, invalid(`a yes; b no;`, "more than one statement; put each option in its own extraOptions item")},
		{`minimal-responses yes; };`, invalid(`minimal-responses yes; };`, "more than one statement; put each option in its own extraOptions item")},
		{`}; zone "evil" { type master; file "/etc/passwd"; }; options {`, invalid(`}; zone "evil" { type master; file "/etc/passwd"; }; options {`, "a statement starts with an option name such as `minimal-responses yes;`")},
		{`rate-limit { window 5; ;`, invalid(`rate-limit { window 5; ;`, "unbalanced braces: 1 block(s) left open; close every `{` with `};`")},
		{`rate-limit window 5; };`, invalid(`rate-limit window 5; };`, "more than one statement; put each option in its own extraOptions item")},
		{`rate-limit { window 5; }`, invalid(`rate-limit { window 5; }`, "every `}` must be followed by `;` as in `allow-notify { key \"k\"; };`")},
		{`version "x\"; }; zone";`, invalid(`version "x\"; }; zone";`, "backslashes are not allowed inside quoted strings; write the value without escapes")},
		{`version "unterminated;`, invalid(`version "unterminated;`, "unterminated quoted string; close it with `\"`")},
		{`minimal-responses yes; # c`, invalid(`minimal-responses yes; # c`, "comments (`#`) are not allowed; remove them")},
		{`minimal-responses yes; // c`, invalid(`minimal-responses yes; // c`, "comments (`//`, `/*`) are not allowed; remove them")},
		{`minimal-responses /* c */ yes;`, invalid(`minimal-responses /* c */ yes;`, "comments (`//`, `/*`) are not allowed; remove them")},
		{`version "a"; //x`, invalid(`version "a"; //x`, "comments (`//`, `/*`) are not allowed; remove them")},
		{`rate-limit { include "/etc/x"; };`, invalid(`rate-limit { include "/etc/x"; };`, "`include` is not allowed; the operator owns every file named.conf reads")},
		{"minimal-responses\x00 yes;", invalid("minimal-responses\x00 yes;", `character '\x00'`+outside)},
		{`minimal-responses $(x);`, invalid(`minimal-responses $(x);`, `character '$'`+outside)},
		{`;`, invalid(`;`, "a statement starts with an option name such as `minimal-responses yes;`")},
		{``, invalid(``, "empty statement; write one option such as `notify-source 198.18.0.1;`")},
		{`min_responses yes;`, invalid(`min_responses yes;`, `"min_responses" is not an option name; option names hold letters, digits and hyphens`)},
		// Not on the allowlist: the classes, and their relatives.
		{`dnstap-output file "/var/cache/bind/tap";`, refused(`dnstap-output file "/var/cache/bind/tap";`, "dnstap-output", dnstap)},
		{`dnstap { all; };`, refused(`dnstap { all; };`, "dnstap", dnstap)},
		{`dnstap-identity none;`, refused(`dnstap-identity none;`, "dnstap-identity", dnstap)},
		{`tkey-gssapi-keytab "/etc/krb5.keytab";`, refused(`tkey-gssapi-keytab "/etc/krb5.keytab";`, "tkey-gssapi-keytab", tkey)},
		{`tkey-gssapi-credential "DNS/x";`, refused(`tkey-gssapi-credential "DNS/x";`, "tkey-gssapi-credential", tkey)},
		{`tkey-domain "x";`, refused(`tkey-domain "x";`, "tkey-domain", tkey)},
		{`listen-on port 953 { any; };`, refused(`listen-on port 953 { any; };`, "listen-on", listeners)},
		{`listen-on-v6 { any; };`, refused(`listen-on-v6 { any; };`, "listen-on-v6", listeners)},
		{`notify-source 198.18.0.1 port 53;`, refused(`notify-source 198.18.0.1 port 53;`, "notify-source", listeners)},
		{`transfer-source-v6 ::1;`, refused(`transfer-source-v6 ::1;`, "transfer-source-v6", listeners)},
		{`port 5353;`, refused(`port 5353;`, "port", listeners)},
		{`controls { inet 0.0.0.0 allow { any; }; };`, refused(`controls { inet 0.0.0.0 allow { any; }; };`, "controls", listeners)},
		{`statistics-channels { inet 0.0.0.0 port 80; };`, refused(`statistics-channels { inet 0.0.0.0 port 80; };`, "statistics-channels", listeners)},
		{`allow-update { any; };`, refused(`allow-update { any; };`, "allow-update", "dynamic updates are per zone: set BindZone spec.updateKeyRef to a BindTSIGKey")},
		{`allow-transfer { any; };`, refused(`allow-transfer { any; };`, "allow-transfer", "the operator allows transfers by TSIG key only; secondaries get zones through the cluster's transfer key")},
		{`allow-notify { key "xfr"; };`, refused(`allow-notify { key "xfr"; };`, "allow-notify", access)},
		{`allow-query-cache { any; };`, refused(`allow-query-cache { any; };`, "allow-query-cache", access)},
		{`blackhole { none; };`, refused(`blackhole { none; };`, "blackhole", access)},
		{`frobnicate yes;`, refused(`frobnicate yes;`, "frobnicate", notListed)},
		{`also-notify { 192.0.2.1; };`, refused(`also-notify { 192.0.2.1; };`, "also-notify", notListed)},
		{`logging { channel x { file "/tmp/x"; }; };`, refused(`logging { channel x { file "/tmp/x"; }; };`, "logging", notListed)},
		{`include "/etc/bind/x";`, refused(`include "/etc/bind/x";`, "include", files)},
		{`directory "/tmp";`, refused(`directory "/tmp";`, "directory", files)},
		{`pid-file "/tmp/x";`, refused(`pid-file "/tmp/x";`, "pid-file", files)},
		{`key-directory "/tmp";`, refused(`key-directory "/tmp";`, "key-directory", files)},
		{`dump-file "/etc/passwd";`, refused(`dump-file "/etc/passwd";`, "dump-file", files)},
		{`session-keyfile "/tmp/k";`, refused(`session-keyfile "/tmp/k";`, "session-keyfile", files)},
		{`plugin query "/lib/x.so";`, refused(`plugin query "/lib/x.so";`, "plugin", "it loads code into named")},
		{`key "k" { algorithm hmac-sha256; secret "x"; };`, refused(`key "k" { algorithm hmac-sha256; secret "x"; };`, "key", "create a BindTSIGKey instead")},
		{`zone "x" { type primary; };`, refused(`zone "x" { type primary; };`, "zone", "create a BindZone instead")},
		{`Options yes;`, refused(`Options yes;`, "options", "extraOptions already go inside the options block; write the option alone")},
		{`notify-delay 5;`, refused(`notify-delay 5;`, "notify-delay", "set spec.tuning.notifyDelay instead")},
		{`recursion yes;`, refused(`recursion yes;`, "recursion", "set spec.mode (Resolver) instead")},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, errs := ValidateOptionStatement(tc.in, p)
			expectErrors(t, errs, tc.want)
		})
	}
}

// TestAllowlistHasNoDangerousStatement: whatever is added to the
// allowlist later, no entry names files, listeners, keys, access control,
// dnstap or TKEY, and every entry says why it is safe.
func TestAllowlistHasNoDangerousStatement(t *testing.T) {
	for name, o := range v1alpha1.AllowedExtraOptions {
		if refusedReason(name) != "it is not on the allowlist of extraOptions statements" {
			t.Errorf("%s is allowed, but its kind is refused: %s", name, refusedReason(name))
		}
		if o.Why == "" || o.Example == "" {
			t.Errorf("%s: every allowed statement says why it is safe and gives an example", name)
		}
		st, errs := ValidateOptionStatement(o.Example, field.NewPath("x"))
		if len(errs) > 0 || st.Name != name {
			t.Errorf("%s: example %q: %v", name, o.Example, errs)
		}
		if len(st.Addresses)+len(st.Prefixes)+len(st.Keys) > 0 {
			t.Errorf("%s: example names an address or key", name)
		}
	}
}

func TestValidateExtraOptionsDuplicate(t *testing.T) {
	_, errs := ValidateExtraOptions([]string{"minimal-responses yes;", "minimal-responses no;"}, field.NewPath("spec", "extraOptions"))
	if len(errs) != 1 || errs[0].Field != "spec.extraOptions[1]" {
		t.Fatalf("%v", errs)
	}
}

func TestPodIPRule(t *testing.T) {
	e, err := NewPolicyEngine(PodIPRules)
	if err != nil {
		t.Fatal(err)
	}
	net := PodNetwork{CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.128.0/17"), netip.MustParsePrefix("fd00:42::/64")}, IPs: []netip.Addr{netip.MustParseAddr("198.19.0.7")}}
	for _, tc := range []struct {
		in     string
		reject bool
	}{
		{`allow-notify { key "xfr"; };`, false},
		{`allow-notify { 198.18.200.1; };`, true},
		{`also-notify { 198.18.0.1; 198.18.130.4 key "k"; };`, true},
		{`also-notify { 198.19.0.7; };`, true},
		{`allow-transfer { fd00:42::5; };`, true},
		{`listen-on-v6 { fd00:43::5; };`, false},
		{`listen-on { 198.18.128.9; };`, true},
		{`allow-transfer { 198.18.128.0/17; };`, false},
		{`notify-source 198.18.200.1;`, false},
		{`allow-transfer { ::ffff:198.18.200.1; };`, true},
	} {
		// None of these statements is on the allowlist any more; the rule
		// stays as a second line should one ever be added.
		st, err := ParseStatement(tc.in)
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		errs := e.Evaluate([]IndexedStatement{{Statement: st, Text: tc.in}}, net, field.NewPath("spec", "extraOptions"))
		if got := len(errs) > 0; got != tc.reject {
			t.Errorf("%q: rejected=%v want %v (%v)", tc.in, got, tc.reject, errs)
		}
		if tc.reject && !strings.Contains(errs[0].Error(), `allow-notify { key "K"; }`) {
			t.Errorf("message does not name the keyed alternative: %v", errs[0])
		}
	}
}

func TestPolicyEngineRejectsBadRules(t *testing.T) {
	if _, err := NewPolicyEngine([]Rule{{Name: "x", Expression: "name"}}); err == nil {
		t.Fatal("non-bool rule compiled")
	}
	if _, err := NewPolicyEngine([]Rule{{Name: "x", Expression: "nope("}}); err == nil {
		t.Fatal("broken rule compiled")
	}
}

func FuzzParseStatement(f *testing.F) {
	for _, s := range []string{
		`allow-notify { key "xfr"; };`, `also-notify { 198.18.0.1 key "k"; 2001:db8::1; };`, `a { b { c; }; };`,
		`}; zone "x" {`, `"`, `{`, `}`, `;`, `# x`, `/* */`, `x "a\"b";`, "x\n{\n};", `! 10.0.0.0/8;`, `key key key;`,
	} {
		f.Add(s)
	}
	e, err := NewPolicyEngine(PodIPRules)
	if err != nil {
		f.Fatal(err)
	}
	net := PodNetwork{CIDRs: []netip.Prefix{netip.MustParsePrefix("10.42.0.0/16")}}
	f.Fuzz(func(t *testing.T, s string) {
		sts, errs := ValidateExtraOptions([]string{s}, field.NewPath("o"))
		if len(errs) == 0 {
			// Whatever is accepted ends in ';' and has balanced quotes
			// (no escapes exist to hide one): what keeps it inside the
			// options block.
			if !strings.HasSuffix(strings.TrimRight(s, " \t\r\n"), ";") || strings.Count(s, `"`)%2 != 0 {
				t.Fatalf("accepted %q", s)
			}
			_ = e.Evaluate(sts, net, field.NewPath("o"))
		}
	})
}
