package webhooks

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
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

func TestValidateOptionStatement(t *testing.T) {
	p := field.NewPath("spec", "extraOptions").Index(0)
	invalid := func(in, msg string) field.ErrorList { return field.ErrorList{field.Invalid(p, in, msg)} }
	forbidden := func(name, why string) field.ErrorList {
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("%q cannot be set in extraOptions: %s", name, why))}
	}
	const outside = " is not allowed outside quotes; write names, numbers, addresses, `{`, `}`, `;`, `!` and quoted strings"
	for _, tc := range []struct {
		in   string
		want field.ErrorList
	}{
		{`minimal-responses yes;`, nil},
		{`allow-notify { key "xfr"; };`, nil},
		{"listen-on port 53 {\n any;\n};", nil},
		{`rate-limit { responses-per-second 10; };`, nil},
		{`allow-query-cache { ! 192.0.2.1; any; };`, nil},
		{`minimal-responses yes`, invalid(`minimal-responses yes`, "a statement must end with `;`, e.g. `minimal-responses yes;`")},
		{`a yes; b no;`, invalid(`a yes; b no;`, "more than one statement; put each option in its own extraOptions item")},
		{`minimal-responses yes; };`, invalid(`minimal-responses yes; };`, "more than one statement; put each option in its own extraOptions item")},
		{`}; zone "evil" { type master; file "/etc/passwd"; }; options {`, invalid(`}; zone "evil" { type master; file "/etc/passwd"; }; options {`, "a statement starts with an option name such as `minimal-responses yes;`")},
		{`allow-notify { key "x"; ;`, invalid(`allow-notify { key "x"; ;`, "unbalanced braces: 1 block(s) left open; close every `{` with `};`")},
		{`allow-notify key "x"; };`, invalid(`allow-notify key "x"; };`, "more than one statement; put each option in its own extraOptions item")},
		{`allow-notify { key "x"; }`, invalid(`allow-notify { key "x"; }`, "every `}` must be followed by `;` as in `allow-notify { key \"k\"; };`")},
		{`version "x\"; }; zone";`, invalid(`version "x\"; }; zone";`, "backslashes are not allowed inside quoted strings; write the value without escapes")},
		{`version "unterminated;`, invalid(`version "unterminated;`, "unterminated quoted string; close it with `\"`")},
		{`minimal-responses yes; # c`, invalid(`minimal-responses yes; # c`, "comments (`#`) are not allowed; remove them")},
		{`minimal-responses yes; // c`, invalid(`minimal-responses yes; // c`, "comments (`//`, `/*`) are not allowed; remove them")},
		{`minimal-responses /* c */ yes;`, invalid(`minimal-responses /* c */ yes;`, "comments (`//`, `/*`) are not allowed; remove them")},
		{`version "a"; //x`, invalid(`version "a"; //x`, "comments (`//`, `/*`) are not allowed; remove them")},
		{`also-notify { include "/etc/x"; };`, invalid(`also-notify { include "/etc/x"; };`, "`include` is not allowed; the operator owns every file named.conf reads")},
		{"minimal-responses\x00 yes;", invalid("minimal-responses\x00 yes;", `character '\x00'`+outside)},
		{`minimal-responses $(x);`, invalid(`minimal-responses $(x);`, `character '$'`+outside)},
		{`;`, invalid(`;`, "a statement starts with an option name such as `minimal-responses yes;`")},
		{``, invalid(``, "empty statement; write one option such as `notify-source 198.18.0.1;`")},
		{`min_responses yes;`, invalid(`min_responses yes;`, `"min_responses" is not an option name; option names hold letters, digits and hyphens`)},
		{`include "/etc/bind/x";`, forbidden("include", "the operator owns every file named.conf reads")},
		{`key "k" { algorithm hmac-sha256; secret "x"; };`, forbidden("key", "create a BindTSIGKey instead")},
		{`controls { inet 0.0.0.0 allow { any; }; };`, forbidden("controls", "the operator owns the control channel")},
		{`statistics-channels { inet 0.0.0.0 port 80; };`, forbidden("statistics-channels", "the operator owns the statistics channel (the agent exports metrics)")},
		{`logging { channel x { file "/tmp/x"; }; };`, forbidden("logging", "the operator owns logging; use spec.queryLog for query logs")},
		{`zone "x" { type primary; };`, forbidden("zone", "create a BindZone instead")},
		{`view "x" { };`, forbidden("view", "create a BindView instead")},
		{`acl "x" { any; };`, forbidden("acl", "create a BindACL instead")},
		{`options { };`, forbidden("options", "extraOptions already go inside the options block; write the option alone")},
		{`Options yes;`, forbidden("options", "extraOptions already go inside the options block; write the option alone")},
		{`server 10.0.0.1 { keys { x; }; };`, forbidden("server", "name servers through BindZone primaries with keyRef instead")},
		{`dnssec-policy "x" { };`, forbidden("dnssec-policy", "create a BindDNSSECPolicy and reference it from the zone")},
		{`tls x { };`, forbidden("tls", "the operator owns TLS configuration")},
		{`http x { };`, forbidden("http", "the operator owns HTTP endpoints")},
		{`plugin query "/lib/x.so";`, forbidden("plugin", "plugins load code into named and are not allowed")},
		{`directory "/tmp";`, forbidden("directory", "the operator owns named's directories")},
		{`pid-file "/tmp/x";`, forbidden("pid-file", "the operator owns named's files")},
		{`key-directory "/tmp";`, forbidden("key-directory", "the operator owns named's directories")},
		{`dump-file "/etc/passwd";`, forbidden("dump-file", "the operator owns named's files and directories")},
		{`notify-delay 5;`, forbidden("notify-delay", "set spec.tuning.notifyDelay instead")},
		{`recursion yes;`, forbidden("recursion", "set spec.mode (Resolver) instead")},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, errs := ValidateOptionStatement(tc.in, p)
			expectErrors(t, errs, tc.want)
		})
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
		sts, errs := ValidateExtraOptions([]string{tc.in}, field.NewPath("spec", "extraOptions"))
		if len(errs) != 0 {
			t.Fatalf("%q: %v", tc.in, errs)
		}
		errs = e.Evaluate(sts, net, field.NewPath("spec", "extraOptions"))
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
