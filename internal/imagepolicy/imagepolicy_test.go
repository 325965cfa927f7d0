package imagepolicy

import (
	"reflect"
	"testing"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestDefaultAllowed(t *testing.T) {
	for _, tc := range []struct {
		bind, agent string
		want        []string
	}{
		{"git.unkin.net/unkin/bind-operator-bind9:v0.1.0", "registry.local:5000/ops/bind-operator@sha256:abc", []string{
			"git.unkin.net/unkin/bind-operator-bind9:", "git.unkin.net/unkin/bind-operator-bind9@",
			"registry.local:5000/ops/bind-operator:", "registry.local:5000/ops/bind-operator@",
		}},
		// A registry port is not a tag; a reference without one is its
		// repository.
		{"localhost:5000/bind", "", []string{"localhost:5000/bind:", "localhost:5000/bind@"}},
		{"", "", nil},
	} {
		if got := DefaultAllowed(tc.bind, tc.agent); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("DefaultAllowed(%q, %q) = %q, want %q", tc.bind, tc.agent, got, tc.want)
		}
	}
}

func TestAllowed(t *testing.T) {
	allowed := DefaultAllowed("git.unkin.net/unkin/bind-operator-bind9:v0.1.0", "git.unkin.net/unkin/bind-operator:v0.1.0")
	for _, tc := range []struct {
		img     string
		allowed []string
		want    bool
	}{
		{"git.unkin.net/unkin/bind-operator-bind9:v0.1.0", allowed, true},
		{"git.unkin.net/unkin/bind-operator-bind9:v0.2.0", allowed, true},
		{"git.unkin.net/unkin/bind-operator@sha256:0123", allowed, true},
		// The ':' or '@' ending each default prefix keeps a lookalike
		// repository out.
		{"git.unkin.net/unkin/bind-operator-bind9-evil:v0.1.0", allowed, false},
		{"git.unkin.net/unkin/bind-operator-evil:v0.1.0", allowed, false},
		{"docker.io/internetsystemsconsortium/bind9:9.18", allowed, false},
		{"evil.example/bind:1", []string{AllowAny}, true},
		{"evil.example/bind:1", nil, true},
	} {
		if got := Allowed(tc.img, tc.allowed); got != tc.want {
			t.Errorf("Allowed(%q, %q) = %v, want %v", tc.img, tc.allowed, got, tc.want)
		}
	}
}

func TestViolations(t *testing.T) {
	allowed := []string{"registry.example/bind9:", "registry.example/bind-operator:"}
	for _, tc := range []struct {
		name string
		spec v1alpha1.BindClusterSpec
		want []Violation
	}{
		{"operator defaults", v1alpha1.BindClusterSpec{}, nil},
		{"allowed pins", v1alpha1.BindClusterSpec{Image: "registry.example/bind9:9.18.30", AgentImage: "registry.example/bind-operator:v1"}, nil},
		{"both foreign", v1alpha1.BindClusterSpec{Image: "evil.example/bind:1", AgentImage: "evil.example/agent:1"},
			[]Violation{{"image", "evil.example/bind:1"}, {"agentImage", "evil.example/agent:1"}}},
		{"agent only", v1alpha1.BindClusterSpec{AgentImage: "evil.example/agent:1"}, []Violation{{"agentImage", "evil.example/agent:1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Violations(&tc.spec, allowed); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Violations = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := Violations(&v1alpha1.BindClusterSpec{Image: "evil.example/bind:1"}, []string{AllowAny}); got != nil {
		t.Errorf("AllowAny: %+v", got)
	}
}

func TestPrefixes(t *testing.T) {
	if got, want := Prefixes([]string{"a:", "b@"}), `"a:", "b@"`; got != want {
		t.Errorf("Prefixes = %s, want %s", got, want)
	}
}
