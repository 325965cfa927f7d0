package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestParseConfig(t *testing.T) {
	g := NewWithT(t)
	root := writeTree(t, map[string]string{
		"etc/named.conf": `# hash comment
// slash comment
/* block
   comment */ options { directory "/var/named"; };
include "etc/more.conf";
controls { inet 127.0.0.1 port 953 allow { localhost; } keys { "rndc-key"; }; };
acl "a b" { ! 10.0.0.0/8; { 192.0.2.1; }; "quoted\"name"; };
`,
		"etc/more.conf": "zone \"example.com\" IN {\n\ttype primary;\n\tfile \"db\";\n};\n",
	})
	st, err := ParseConfig(root, "/etc/named.conf")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st).To(HaveLen(4))
	g.Expect(st[0].Keyword()).To(Equal("options"))
	g.Expect(st[0].Pos).To(Equal(Pos{File: "/etc/named.conf", Line: 4}))
	g.Expect(st[0].Find("directory").Arg(0)).To(Equal("/var/named"))
	// The included zone replaces the include, with its own file and line.
	g.Expect(st[1].Keyword()).To(Equal("zone"))
	g.Expect(st[1].Pos).To(Equal(Pos{File: "etc/more.conf", Line: 1}))
	g.Expect(st[1].Find("type").Pos.Line).To(Equal(2))
	// Two blocks in one statement.
	inet := st[2].Block[0]
	g.Expect(inet.Tail).To(HaveLen(1))
	g.Expect(inet.Tail[0].Keyword()).To(Equal("keys"))
	g.Expect(inet.Text()).To(Equal(`inet 127.0.0.1 port 953 allow { localhost; } keys { "rndc-key"; };`))
	// Negation, nested lists and escapes.
	acl := st[3]
	g.Expect(acl.Arg(0)).To(Equal("a b"))
	g.Expect(acl.Block[0].Words).To(Equal([]Word{{Text: "!"}, {Text: "10.0.0.0/8"}}))
	g.Expect(acl.Block[1].HasBlock).To(BeTrue())
	g.Expect(acl.Block[2].Words).To(Equal([]Word{{Text: `quoted"name`, Quoted: true}}))
	g.Expect(acl.Text()).To(Equal(`acl "a b" { ! 10.0.0.0/8; { 192.0.2.1; }; "quoted\"name"; };`))
}

func TestParseConfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"unclosed block", map[string]string{"n.conf": "options {\n directory \"x\";\n"}, "n.conf: a { is not closed"},
		{"missing semicolon", map[string]string{"n.conf": "options { directory \"x\" }\n"}, `n.conf:1: the "directory" statement has no ;`},
		// An error never quotes a statement: it may hold key material.
		{"no material in errors", map[string]string{"n.conf": "key k { secret \"c2VjcmV0\" }\n"}, `n.conf:1: the "secret" statement has no ;`},
		{"stray close", map[string]string{"n.conf": "};\n"}, "n.conf:1: a } closes no block"},
		{"unclosed string", map[string]string{"n.conf": "\n\nkey \"k { };\n"}, "n.conf:3: a quoted string is not closed"},
		{"unclosed comment", map[string]string{"n.conf": "/* x\n"}, "n.conf:1: a /* comment is not closed"},
		{"include cycle", map[string]string{"n.conf": "include \"m.conf\";\n", "m.conf": "\ninclude \"n.conf\";\n"}, "n.conf:1: m.conf:2: n.conf: includes itself"},
		{"missing include", map[string]string{"n.conf": "include \"gone.conf\";\n"}, "n.conf:1: open"},
		{"deep nesting", map[string]string{"n.conf": strings.Repeat("{", 100000)}, "n.conf:1: blocks nest deeper than 32"},
		{"include with two files", map[string]string{"n.conf": "include \"a\" \"b\";\n"}, "n.conf:1: include takes one file name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(writeTree(t, tc.files), "n.conf")
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

// An include outside the root resolves inside it: the import reads only
// the copy of the server's files.
func TestParseConfigStaysInRoot(t *testing.T) {
	root := writeTree(t, map[string]string{"n.conf": "include \"../../../../etc/passwd\";\n", "etc/passwd": "zone \"x\" { type primary; };\n"})
	st, err := ParseConfig(root, "n.conf")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(st[0].Pos.File).To(Equal("../../../../etc/passwd"))
}

// TestZoneFileIncludesRelativeToWorkdir: named resolves a relative
// $INCLUDE against its working directory, not the including file's.
func TestZoneFileIncludesRelativeToWorkdir(t *testing.T) {
	g := NewWithT(t)
	root := writeTree(t, map[string]string{
		"srv/zones/db.a":  "$TTL 60\n@ SOA ns.example.net. hm 1 2 3 4 5\n$INCLUDE zones/inc.a\n$include \"zones/inc.b\" sub.a.example.\n",
		"srv/zones/inc.a": "x A 192.0.2.1\n$INCLUDE zones/inc.c\n",
		"srv/zones/inc.b": "y A 192.0.2.2\n",
		"srv/zones/inc.c": "z A 192.0.2.3\n",
		"zones/inc.a":     "wrong A 192.0.2.9\n",
	})
	data, err := ReadZoneFile(root, "/srv", "zones/db.a", "a.example")
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, r := range data.Records {
		names = append(names, r.RR.Header().Name)
	}
	g.Expect(names).To(Equal([]string{"x.a.example.", "z.a.example.", "y.sub.a.example."}))
	// Each record says where it is, in the file that holds it.
	var where []string
	for _, r := range data.Records {
		where = append(where, r.Pos.String())
	}
	g.Expect(where).To(Equal([]string{"/srv/zones/inc.a:1", "/srv/zones/inc.c:1", "/srv/zones/inc.b:1"}))
	g.Expect(rewriteInclude([]byte("$INCLUDE /abs/f\n"), "/srv")).To(Equal([]byte("$INCLUDE /abs/f\n")))
	g.Expect(rewriteInclude([]byte("$INCLUDEX f\n"), "/srv")).To(Equal([]byte("$INCLUDEX f\n")))
}

// TestZoneFileGenerateTakesTheDefaultTTL: named gives $GENERATE's records
// the $TTL in effect (the DNS library alone gives them 3600), in an
// included file too; an explicit TTL stays.
func TestZoneFileGenerateTakesTheDefaultTTL(t *testing.T) {
	g := NewWithT(t)
	root := writeTree(t, map[string]string{
		"db":  "$TTL 600\n@ SOA ns.example.net. hm 1 2 3 4 5\n$GENERATE 1-2 a$ A 192.0.2.$\n$GENERATE 1-1 b$ 1h IN A 192.0.2.9\n$TTL 2m\n$INCLUDE inc\n",
		"inc": "$GENERATE 1-1 c$ A 192.0.2.7\n",
	})
	data, err := ReadZoneFile(root, "/", "db", "g.example")
	g.Expect(err).NotTo(HaveOccurred())
	ttls := map[string]uint32{}
	for _, r := range data.Records {
		ttls[r.RR.Header().Name] = r.RR.Header().Ttl
	}
	g.Expect(ttls).To(Equal(map[string]uint32{"a1.g.example.": 600, "a2.g.example.": 600, "b1.g.example.": 3600, "c1.g.example.": 120}))
	g.Expect(data.Records[1].Pos.String()).To(Equal("/db:3"), "a $GENERATE's records are at the $GENERATE")
	g.Expect(data.Records[2].Pos.String()).To(Equal("/db:4"))
	for in, want := range map[string]uint32{"3600": 3600, "1h30m": 5400, "2W": 1209600, "1d1s": 86401} {
		got, ok := parseTTL(in)
		g.Expect(ok).To(BeTrue(), in)
		g.Expect(got).To(Equal(want), in)
	}
	for _, in := range []string{"", "h", "IN", "1x", "99999999999"} {
		_, ok := parseTTL(in)
		g.Expect(ok).To(BeFalse(), in)
	}
}

// FuzzReadZoneFile: any zone file (and one file it may include) is read
// or refused with an error, never a panic, and every record it returns
// says a line of a file that exists.
func FuzzReadZoneFile(f *testing.F) {
	f.Add("$TTL 60\n@ SOA ns.example.net. hm 1 2 3 4 5\nwww A 192.0.2.1\n$INCLUDE inc\n", "x A 192.0.2.2\n")
	f.Add("@ SOA ns hm ( 1\n 2 3 4 5 )\n$GENERATE 1-3 h$ A 192.0.2.$\n", "")
	f.Fuzz(func(t *testing.T, zone, inc string) {
		root := t.TempDir()
		for name, text := range map[string]string{"db": zone, "inc": inc} {
			if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data, err := ReadZoneFile(root, "/", "db", "f.example")
		if err != nil {
			return
		}
		for _, r := range data.Records {
			if r.Pos.Line < 1 || (r.Pos.File != "/db" && r.Pos.File != "/inc") {
				t.Fatalf("record %v at %v", r.RR, r.Pos)
			}
		}
	})
}
