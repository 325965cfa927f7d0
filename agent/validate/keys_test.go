package validate

import (
	"strings"
	"testing"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/agent"
)

// testKey makes the .key and .private files of a new ECDSA key of zone.
func testKey(t testing.TB, zone string) (pub, priv agent.KeyFile) {
	t.Helper()
	k := &dns.DNSKEY{Hdr: dns.RR_Header{Name: dns.Fqdn(zone), Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: 3600},
		Flags: 257, Protocol: 3, Algorithm: dns.ECDSAP256SHA256}
	p, err := k.Generate(256)
	if err != nil {
		t.Fatal(err)
	}
	pub = agent.KeyFile{Algorithm: k.Algorithm, Tag: k.KeyTag(), Kind: agent.KeyFilePublic, Data: "; a comment\n" + k.String() + "\n"}
	priv = agent.KeyFile{Algorithm: k.Algorithm, Tag: k.KeyTag(), Kind: agent.KeyFilePrivate, Data: k.PrivateKeyString(p)}
	return pub, priv
}

func TestKeys(t *testing.T) {
	pub, priv := testKey(t, "example.com")
	state := agent.KeyFile{Algorithm: pub.Algorithm, Tag: pub.Tag, Kind: agent.KeyFileState, Data: "; state\nKSK: yes\n"}
	got, err := Keys(agent.ZoneKeys{Zone: "Example.COM.", Files: []agent.KeyFile{state, priv, pub}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Zone != "example.com" || got.Files[0].Kind != "key" || got.Files[1].Kind != "private" || got.Files[2].Kind != "state" {
		t.Fatalf("not canonical: %s %v", got.Zone, kindsOf(got.Files))
	}
	otherPub, otherPriv := testKey(t, "other.com")
	secret := strings.TrimSpace(priv.Data)
	for _, c := range []struct {
		desc  string
		files []agent.KeyFile
		want  string
	}{
		{"another zone's key", []agent.KeyFile{otherPub, otherPriv}, "is a key of other.com., not of example.com."},
		{"a tag that is not the key's", []agent.KeyFile{{Algorithm: pub.Algorithm, Tag: pub.Tag + 1, Kind: "key", Data: pub.Data}, priv}, "holds the key with tag"},
		{"no private half", []agent.KeyFile{pub}, "has no .private file"},
		{"a private key of another algorithm", []agent.KeyFile{pub, {Algorithm: pub.Algorithm, Tag: pub.Tag, Kind: "private", Data: strings.Replace(priv.Data, "Algorithm: 13", "Algorithm: 8", 1)}}, "is not a private key file of algorithm 13"},
		{"twice", []agent.KeyFile{pub, pub, priv}, "appears twice"},
		{"two records", []agent.KeyFile{{Algorithm: pub.Algorithm, Tag: pub.Tag, Kind: "key", Data: pub.Data + pub.Data}, priv}, "exactly one DNSKEY"},
		{"an include", []agent.KeyFile{{Algorithm: pub.Algorithm, Tag: pub.Tag, Kind: "key", Data: "$INCLUDE /etc/passwd\n"}, priv}, "does not parse"},
		{"a path as kind", []agent.KeyFile{{Algorithm: 13, Tag: 1, Kind: "../x", Data: "x"}}, "is not one of"},
		{"binary", []agent.KeyFile{{Algorithm: 13, Tag: 1, Kind: "state", Data: "a\x00"}}, "byte 1 is not printable"},
		{"too large", []agent.KeyFile{{Algorithm: 13, Tag: 1, Kind: "state", Data: strings.Repeat("a", agent.MaxKeyFileBytes+1)}}, "the limit is"},
	} {
		_, err := Keys(agent.ZoneKeys{Zone: "example.com", Files: c.files})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.desc, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), secret[len(secret)-20:]) {
			t.Errorf("%s: the refusal quotes the private key: %v", c.desc, err)
		}
	}
}

func TestKeyFileNames(t *testing.T) {
	f := agent.KeyFile{Algorithm: 13, Tag: 7, Kind: "private"}
	name := KeyFileName("example.com", f)
	if name != "Kexample.com.+013+00007.private" {
		t.Fatalf("name %q", name)
	}
	if got, ok := ParseKeyFileName("example.com", name); !ok || got != f {
		t.Fatalf("parse %q: %+v %v", name, got, ok)
	}
	for _, bad := range []string{"Kexample.com.+013+00007.private~", "Kexample.com.+13+00007.key", "Ksub.example.com.+013+00007.key", "Kexample.com.+013+99999.key", "Kexample.com.+000+00007.key", "Kexample.com.+013+00007.ds"} {
		if _, ok := ParseKeyFileName("example.com", bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzKeys: no input panics the checks, and what they accept names files
// only by number and kind.
//
//	go test -fuzz FuzzKeys -fuzztime 30s ./agent/validate/
func FuzzKeys(f *testing.F) {
	pub, priv := testKey(f, "example.com")
	f.Add("example.com", uint8(13), pub.Tag, "key", pub.Data, "private", priv.Data)
	f.Add("example.com", uint8(8), uint16(1), "state", "x", "../k", "$INCLUDE /etc/passwd")
	f.Fuzz(func(t *testing.T, zone string, alg uint8, tag uint16, k1, d1, k2, d2 string) {
		_, _ = ParseKeyFileName(zone, d1)
		got, err := Keys(agent.ZoneKeys{Zone: zone, Files: []agent.KeyFile{{Algorithm: alg, Tag: tag, Kind: k1, Data: d1}, {Algorithm: alg, Tag: tag, Kind: k2, Data: d2}}})
		if err != nil {
			if !IsValidation(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, f := range got.Files {
			if name := KeyFileName(got.Zone, f); strings.ContainsAny(name, "/\x00") {
				t.Fatalf("accepted file name %q", name)
			}
		}
	})
}

func kindsOf(files []agent.KeyFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Kind)
	}
	return out
}
