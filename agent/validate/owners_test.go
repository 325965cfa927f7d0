package validate

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
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
		{agent.OwnersRequest{Zone: "example.com"}, "updateKeys"},
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

// FuzzOwners: no input panics Owners, and what it accepts is canonical and
// inside the zone.
//
//	go test -fuzz FuzzOwners -fuzztime 30s ./agent/validate/
func FuzzOwners(f *testing.F) {
	f.Add("", "example.com", "updates", "www.example.com.", "A")
	f.Add("inside", "Example.com.", "k.", "EXAMPLE.COM", "soa")
	f.Fuzz(func(t *testing.T, view, zone, key, name, typ string) {
		got, err := Owners(agent.OwnersRequest{View: view, Zone: zone, UpdateKeys: []string{key}, Sets: []agent.OwnedSet{{Name: name, Type: typ}}})
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
	})
}
