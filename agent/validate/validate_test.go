package validate

import (
	"strings"
	"testing"
)

func TestZoneName(t *testing.T) {
	good := map[string]string{
		"example.com":                     "example.com",
		"Example.COM.":                    "example.com",
		"_msdcs.corp.example":             "_msdcs.corp.example",
		"2.0.192.in-addr.arpa":            "2.0.192.in-addr.arpa",
		strings.Repeat("a", 63) + ".test": strings.Repeat("a", 63) + ".test",
	}
	for in, want := range good {
		got, err := ZoneName(in)
		if err != nil || got != want {
			t.Errorf("ZoneName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{
		"", ".", "a..b", `a"b`, "a b", "a;b", "a{b", "a}b", "a/b", "../etc", "a\nb", "a\x00b",
		strings.Repeat("a", 64) + ".test", strings.Repeat("a.", 127) + "aa", "é.test", "a\\b", "a'b", " a.test", "a.test ",
	} {
		if _, err := ZoneName(bad); err == nil || !IsValidation(err) {
			t.Errorf("ZoneName(%q) accepted", bad)
		}
	}
}

func TestViewName(t *testing.T) {
	for _, good := range []string{"", "internal", "a", "ext-1", "a.b"} {
		if err := ViewName(good); err != nil {
			t.Errorf("ViewName(%q): %v", good, err)
		}
	}
	for _, bad := range []string{".", "..", "a..b", "-a", "a-", "_default", "A", "a/b", "a b", `a"`, strings.Repeat("a", 64)} {
		if err := ViewName(bad); err == nil {
			t.Errorf("ViewName(%q) accepted", bad)
		}
	}
}

func TestParseClause(t *testing.T) {
	const dir = "/var/lib/bind"
	good := []string{
		`{ type primary; file "/var/lib/bind/zones/_default/a.test.db"; };`,
		`{ type master; file "/var/lib/bind/a.db"; allow-transfer { key "k"; 10.0.0.0/8; !192.0.2.1; }; also-notify { 198.18.0.5 key "k"; }; };`,
		"{\n\ttype secondary;\n\tfile \"/var/lib/bind/s/a.db\";\n\tprimaries { 198.18.0.1 key \"k\"; };\n};",
		`{ type primary; file "/var/lib/bind/a.db"; allow-update { key "u"; }; dnssec-policy "p"; inline-signing no; allow-query { any; }; };`,
		`{ type forward; forwarders { 2001:db8::1; }; forward only; };`,
	}
	for _, c := range good {
		if _, err := ParseClause(c, dir); err != nil {
			t.Errorf("ParseClause(%q): %v", c, err)
		}
	}
	bad := map[string]string{
		"empty":             ``,
		"no block":          `type primary;`,
		"no semicolon":      `{ type primary; }`,
		"text after":        `{ type primary; }; zone "x" { type primary; };`,
		"escape quote":      `{ type primary; file "a.db"; }; include "/etc/passwd"; {};`,
		"include":           `{ type primary; include "/etc/x"; };`,
		"nested zone":       `{ type primary; zone "x" { type primary; }; };`,
		"nested view":       `{ type primary; view x { }; };`,
		"comment hash":      `{ type primary; # x` + "\n" + `};`,
		"comment slashes":   `{ type primary; // x` + "\n" + `};`,
		"comment block":     `{ type primary; /* x */ };`,
		"comment in word":   `{ type primary; allow-query { 10.0.0.0//8; }; };`,
		"backslash":         `{ type primary; file "a\".db"; };`,
		"newline in string": "{ type primary; file \"a\n.db\"; };",
		"unterminated":      `{ type primary; file "a.db; };`,
		"unbalanced open":   `{ type primary; allow-query { any; };`,
		"unbalanced close":  `{ type primary; } }; };`,
		"no type":           `{ file "/var/lib/bind/a.db"; };`,
		"two types":         `{ type primary; type secondary; };`,
		"hint":              `{ type hint; file "/var/lib/bind/root"; };`,
		"file outside":      `{ type primary; file "/etc/shadow"; };`,
		"file relative":     `{ type primary; file "a.db"; };`,
		"file dotdot":       `{ type primary; file "/var/lib/bind/../../etc/shadow"; };`,
		"journal outside":   `{ type primary; file "/var/lib/bind/a.db"; journal "/etc/cron.d/x"; };`,
		"dlz":               `{ type primary; dlz x; };`,
		"database":          `{ type primary; database "dlopen /tmp/x.so"; };`,
		"single quote":      `{ type primary; file '/var/lib/bind/a.db'; };`,
		"nul":               "{ type primary;\x00 };",
		"utf8":              "{ type primary; file \"/var/lib/bind/é\"; };",
		"empty stmt":        `{ type primary; ; };`,
		"brace no semi":     `{ type primary; allow-query { any; } };`,
		"deep":              `{ type primary; a { b { c { d { e { f { g; }; }; }; }; }; }; };`,
		"too long":          `{ type primary; allow-query { ` + strings.Repeat("any; ", 4000) + `}; };`,
	}
	for name, c := range bad {
		if _, err := ParseClause(c, dir); err == nil || !IsValidation(err) {
			t.Errorf("%s: ParseClause(%q) accepted (%v)", name, c, err)
		}
	}
}

// named prints showzone in its grammar order with its own spacing; a
// request that says the same thing compares equal, a different one not.
func TestEqualShowzone(t *testing.T) {
	shown := `zone "a.test" { type primary; file "/tmp/agentexp/a.db"; allow-transfer  { key "ctl"; 10.0.0.0/8; }; allow-update { key "ctl"; }; also-notify { 10.1.1.1 key "ctl"; }; };`
	s, err := ParseShowzone(shown)
	if err != nil {
		t.Fatal(err)
	}
	same := `{ type master; file "/tmp/agentexp/a.db"; allow-transfer { key ctl; 10.0.0.0/8; }; also-notify { 10.1.1.1 key "ctl"; }; allow-update { key "ctl"; }; };`
	r, err := ParseClause(same, "")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Equal(r) {
		t.Fatalf("equal clauses differ:\n%v\n%v", s.statements, r.statements)
	}
	other := strings.Replace(same, "10.0.0.0/8", "10.0.0.0/16", 1)
	o, _ := ParseClause(other, "")
	if s.Equal(o) {
		t.Fatal("different clauses compare equal")
	}
	// Order inside a list matters (ACLs are first-match).
	swapped := strings.Replace(same, `key ctl; 10.0.0.0/8;`, `10.0.0.0/8; key ctl;`, 1)
	w, _ := ParseClause(swapped, "")
	if s.Equal(w) {
		t.Fatal("reordered ACL compares equal")
	}
}

// SignsInPlace is what makes the agent wait for a zone's initial signing:
// a policy that signs, without inline signing, in any spelling named
// accepts (and shows back through showzone).
func TestClauseSignsInPlace(t *testing.T) {
	const file = `file "/var/lib/bind/a.db"; `
	for clause, want := range map[string]bool{
		`{ type primary; ` + file + `};`:                                                     false,
		`{ type primary; ` + file + `dnssec-policy "p"; inline-signing no; };`:               true,
		`{ type primary; ` + file + `dnssec-policy p; };`:                                    true,
		`{ type primary; ` + file + `dnssec-policy "default"; inline-signing false; };`:      true,
		`{ type primary; ` + file + `dnssec-policy "p"; inline-signing yes; };`:              false,
		`{ type primary; ` + file + `dnssec-policy "p"; inline-signing TRUE; };`:             false,
		`{ type primary; ` + file + `dnssec-policy "none"; };`:                               false,
		`{ type primary; ` + file + `dnssec-policy "insecure"; inline-signing no; };`:        false,
		`{ type primary; ` + file + `dnssec-policy None; };`:                                 false,
		`zone "a.test" { type primary; ` + file + `dnssec-policy "p"; inline-signing no; };`: true,
	} {
		var c *Clause
		var err error
		if strings.HasPrefix(clause, "zone") {
			c, err = ParseShowzone(clause)
		} else {
			c, err = ParseClause(clause, "/var/lib/bind")
		}
		if err != nil {
			t.Fatalf("%s: %v", clause, err)
		}
		if c.SignsInPlace != want {
			t.Errorf("%s: SignsInPlace = %v, want %v", clause, c.SignsInPlace, want)
		}
	}
}
