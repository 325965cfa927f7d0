package webhooks

import (
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
	for _, tc := range []struct {
		in, want string
	}{
		{`minimal-responses yes;`, ""},
		{`allow-notify { key "xfr"; };`, ""},
		{"listen-on port 53 {\n any;\n};", ""},
		{`rate-limit { responses-per-second 10; };`, ""},
		{`minimal-responses yes`, "must end with `;`"},
		{`a yes; b no;`, "more than one statement"},
		{`minimal-responses yes; };`, "more than one statement"},
		{`}; zone "evil" { type master; file "/etc/passwd"; }; options {`, "starts with an option name"},
		{`allow-notify { key "x"; ;`, "unbalanced"},
		{`allow-notify key "x"; };`, "more than one statement"},
		{`allow-notify { key "x"; }`, "must be followed by `;`"},
		{`version "x\"; }; zone";`, "backslashes"},
		{`version "unterminated;`, "unterminated"},
		{`minimal-responses yes; # c`, "comments"},
		{`minimal-responses yes; // c`, "comments"},
		{`minimal-responses /* c */ yes;`, "comments"},
		{`version "a"; //x`, "comments"},
		{`also-notify { include "/etc/x"; };`, "`include`"},
		{`include "/etc/bind/x";`, "owns every file"},
		{`key "k" { algorithm hmac-sha256; secret "x"; };`, "create a BindTSIGKey"},
		{`controls { inet 0.0.0.0 allow { any; }; };`, "control channel"},
		{`statistics-channels { inet 0.0.0.0 port 80; };`, "statistics"},
		{`logging { channel x { file "/tmp/x"; }; };`, "logging"},
		{`zone "x" { type primary; };`, "BindZone"},
		{`view "x" { };`, "BindView"},
		{`acl "x" { any; };`, "BindACL"},
		{`options { };`, "options block"},
		{`server 10.0.0.1 { keys { x; }; };`, "keyRef"},
		{`dnssec-policy "x" { };`, "BindDNSSECPolicy"},
		{`tls x { };`, "TLS"},
		{`http x { };`, "HTTP"},
		{`plugin query "/lib/x.so";`, "code"},
		{`directory "/tmp";`, "directories"},
		{`pid-file "/tmp/x";`, "files"},
		{`key-directory "/tmp";`, "directories"},
		{`dump-file "/etc/passwd";`, "files"},
		{`notify-delay 5;`, "spec.tuning.notifyDelay"},
		{`recursion yes;`, "Resolver"},
		{"minimal-responses\x00 yes;", "not allowed outside quotes"},
		{`minimal-responses $(x);`, "not allowed outside quotes"},
		{`Options yes;`, "options block"},
		{`;`, "starts with an option name"},
		{``, "empty statement"},
	} {
		_, errs := ValidateOptionStatement(tc.in, field.NewPath("spec", "extraOptions").Index(0))
		if tc.want == "" {
			if len(errs) != 0 {
				t.Errorf("%q: unexpected %v", tc.in, errs)
			}
			continue
		}
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) || errs[0].Field != "spec.extraOptions[0]" {
			t.Errorf("%q: got %v, want %q", tc.in, errs, tc.want)
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
