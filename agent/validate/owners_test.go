package validate

import (
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/records"
)

func TestOwners(t *testing.T) {
	g := NewWithT(t)
	got, err := Owners(agent.OwnersRequest{Zone: "Example.COM.", UpdateKeys: []string{"Updates."}, Sets: []agent.OwnedSet{{Name: "WWW.example.com.", Type: "a"}, {Name: "example.com", Type: "soa"}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(agent.OwnersRequest{Zone: "example.com", UpdateKeys: []string{"updates"}, Sets: []agent.OwnedSet{{Name: "www.example.com", Type: "A"}, {Name: "example.com", Type: "SOA"}}}))

	for _, c := range []struct {
		req   agent.OwnersRequest
		field string
	}{
		{agent.OwnersRequest{Zone: "../x", UpdateKeys: []string{"k"}}, "zone"},
		{agent.OwnersRequest{View: "Bad View", Zone: "example.com", UpdateKeys: []string{"k"}}, "view"},
		{agent.OwnersRequest{Zone: "example.com", UpdateKeys: make([]string, 17)}, "updateKeys"},
		{agent.OwnersRequest{Zone: "example.com", UpdateKeys: []string{"a key"}}, "updateKeys"},
		{agent.OwnersRequest{Zone: "example.com", UpdateKeys: []string{"k"}, Sets: []agent.OwnedSet{{Name: "www.example.org", Type: "A"}}}, "sets.name"},
		{agent.OwnersRequest{Zone: "example.com", UpdateKeys: []string{"k"}, Sets: []agent.OwnedSet{{Name: "badexample.com", Type: "A"}}}, "sets.name"},
		{agent.OwnersRequest{Zone: "example.com", UpdateKeys: []string{"k"}, Sets: []agent.OwnedSet{{Name: "www.example.com", Type: "A;"}}}, "sets.type"},
		{agent.OwnersRequest{Zone: "example.com", UpdateKeys: []string{"k"}, Sets: []agent.OwnedSet{{Name: "w w.example.com", Type: "A"}}}, "sets.name"},
	} {
		_, err := Owners(c.req)
		var ve *Error
		g.Expect(err).To(BeAssignableToTypeOf(ve), "%+v", c.req)
		g.Expect(err.(*Error).Field).To(Equal(c.field), "%+v: %v", c.req, err)
	}
}

// Values are kept as given, in order (spaces and quotes included: TXT
// values have them), and a request may name no update key: it is then
// only a record for the operator.
func TestOwnersValues(t *testing.T) {
	g := NewWithT(t)
	in := agent.OwnersRequest{View: "inside", Zone: "example.com", Sets: []agent.OwnedSet{
		{Name: "TXT.example.com.", Type: "txt", Values: []string{`"some text" "<and more>"`, `"a"`}},
		{Name: "www.example.com", Type: "A", Values: []string{"192.0.2.2", "192.0.2.1"}},
		{Name: "example.com", Type: "SOA"},
	}}
	got, err := Owners(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(agent.OwnersRequest{View: "inside", Zone: "example.com", UpdateKeys: []string{}, Sets: []agent.OwnedSet{
		{Name: "txt.example.com", Type: "TXT", Values: []string{`"some text" "<and more>"`, `"a"`}},
		{Name: "www.example.com", Type: "A", Values: []string{"192.0.2.2", "192.0.2.1"}},
		{Name: "example.com", Type: "SOA"},
	}}))
	got.Sets[1].Values[0] = "changed"
	g.Expect(in.Sets[1].Values[0]).To(Equal("192.0.2.2"), "the result does not share the caller's values")
	again, err := Owners(got)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(got), "canonical stays canonical")

	set := func(values ...string) agent.OwnersRequest {
		return agent.OwnersRequest{Zone: "example.com", UpdateKeys: []string{"k"}, Sets: []agent.OwnedSet{{Name: "www.example.com", Type: "TXT", Values: values}}}
	}
	many := make([]string, agent.MaxOwnedValues+1)
	for i := range many {
		many[i] = "v"
	}
	_, err = Owners(set(many[:agent.MaxOwnedValues]...))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Owners(set(strings.Repeat("x", agent.MaxOwnedValueBytes)))
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range []struct {
		req agent.OwnersRequest
		msg string
	}{
		{set(many...), "sets.values: www.example.com TXT has 101 values, the limit is 100"},
		{set("ok", strings.Repeat("x", agent.MaxOwnedValueBytes+1)), "sets.values: www.example.com TXT: value 1 is 73729 bytes long, it must be 1 to 73728"},
		{set(""), "sets.values: www.example.com TXT: value 0 is 0 bytes long, it must be 1 to 73728"},
		{set(`"line one"`, `"line one`+"\n"+`two"`), "sets.values: www.example.com TXT: value 1 has the control character 0x0a at byte 9"},
		{set("a\x00"), "sets.values: www.example.com TXT: value 0 has the control character 0x00 at byte 1"},
		{set("del\x7f"), "sets.values: www.example.com TXT: value 0 has the control character 0x7f at byte 3"},
		{agent.OwnersRequest{Zone: "example.com", UpdateKeys: make([]string, 17)}, "updateKeys: must list at most 16 keys, got 17"},
	} {
		_, err := Owners(c.req)
		g.Expect(err).To(MatchError(c.msg))
		g.Expect(IsValidation(err)).To(BeTrue())
	}
}

// TestLargestCanonicalValueFits: the canonical form of the longest values
// a DNSRecord may hold (4096 characters, the CRD's limit) fits
// agent.MaxOwnedValueBytes, so the operator can always store its
// appliedValues; and the bound is not far above what they need.
func TestLargestCanonicalValueFits(t *testing.T) {
	g := NewWithT(t)
	longest := 0
	for _, c := range []struct{ typ, value string }{
		{"TXT", `"` + strings.Repeat("a", 4094) + `"`},
		{"TXT", strings.Repeat("a", 4096)},
		{"TXT", strings.Repeat("a ", 2048)},
		{"TXT", `"` + strings.Repeat("é", 4094) + `"`},
		{"TXT", `"` + strings.Repeat("\U0001F600", 4094) + `"`},
		{"TXT", strings.Repeat("\U0001F600 ", 2048)},
		{"CAA", `0 issue "` + strings.Repeat("\U0001F600", 63) + `"`}, // miekg/dns takes 255 bytes
	} {
		g.Expect(len([]rune(c.value))).To(BeNumerically("<=", 4096))
		v, err := records.CanonicalValue("example.com", "www", c.typ, c.value)
		g.Expect(err).NotTo(HaveOccurred(), "%s %.40q", c.typ, c.value)
		g.Expect(len(v)).To(BeNumerically("<=", agent.MaxOwnedValueBytes), "%s %.40q", c.typ, c.value)
		_, err = Owners(agent.OwnersRequest{Zone: "example.com", Sets: []agent.OwnedSet{{Name: "www.example.com", Type: c.typ, Values: []string{v}}}})
		g.Expect(err).NotTo(HaveOccurred(), "%s %.40q", c.typ, c.value)
		longest = max(longest, len(v))
	}
	g.Expect(longest).To(BeNumerically(">", agent.MaxOwnedValueBytes*7/8), "lower the bound")
	t.Logf("longest canonical value: %d bytes of %d allowed", longest, agent.MaxOwnedValueBytes)
}

func TestRef(t *testing.T) {
	g := NewWithT(t)
	got, err := Ref(agent.ZoneRef{View: "inside", Zone: "Example.COM."})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(agent.ZoneRef{View: "inside", Zone: "example.com"}))
	_, err = Ref(agent.ZoneRef{View: "In side", Zone: "example.com"})
	g.Expect(err).To(MatchError(ContainSubstring("view:")))
	_, err = Ref(agent.ZoneRef{Zone: "../etc"})
	g.Expect(err).To(MatchError(ContainSubstring("zone:")))
}

// FuzzOwners: no input panics Owners, and what it accepts is canonical and
// inside the zone.
//
//	go test -fuzz FuzzOwners -fuzztime 30s ./agent/validate/
func FuzzOwners(f *testing.F) {
	f.Add("", "example.com", "updates", "www.example.com.", "A", "192.0.2.1")
	f.Add("inside", "Example.com.", "k.", "EXAMPLE.COM", "soa", "")
	f.Add("inside", "example.com", "", "txt.example.com", "TXT", `"some text" "more"`)
	f.Fuzz(func(t *testing.T, view, zone, key, name, typ, value string) {
		var keys, values []string
		if key != "" {
			keys = []string{key}
		}
		if value != "" {
			values = []string{value, value + " 2"}
		}
		got, err := Owners(agent.OwnersRequest{View: view, Zone: zone, UpdateKeys: keys, Sets: []agent.OwnedSet{{Name: name, Type: typ, Values: values}}})
		if err != nil {
			if !IsValidation(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		s := got.Sets[0]
		if s.Name != got.Zone && !strings.HasSuffix(s.Name, "."+got.Zone) {
			t.Fatalf("accepted %q outside the zone %q", s.Name, got.Zone)
		}
		if s.Name != strings.ToLower(s.Name) || s.Type != strings.ToUpper(s.Type) || strings.HasSuffix(s.Name, ".") {
			t.Fatalf("not canonical: %+v", s)
		}
		if !slices.Equal(s.Values, values) {
			t.Fatalf("values %q became %q", values, s.Values)
		}
		for _, v := range s.Values {
			if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("accepted the value %q", v)
			}
		}
	})
}
