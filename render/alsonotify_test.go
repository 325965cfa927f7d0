package render

import (
	"strings"
	"testing"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestAlsoNotifyPorts(t *testing.T) {
	zone := &bindv1alpha1.BindZone{Spec: bindv1alpha1.BindZoneSpec{ZoneName: "example.com", Type: bindv1alpha1.ZonePrimary}}
	zone.Name = "example-com"
	for _, tc := range []struct {
		dnsPort int32
		targets []string
		want    string
	}{
		{0, []string{"198.18.0.2"}, "also-notify { 198.18.0.2; };"},
		{5353, []string{"198.18.0.2"}, "also-notify { 198.18.0.2 port 5353; };"},
		{0, []string{"127.0.0.1:5301", "[::1]:5302"}, "also-notify { 127.0.0.1 port 5301; ::1 port 5302; };"},
		{0, []string{"127.0.0.1:53"}, "also-notify { 127.0.0.1; };"},
	} {
		c := &bindv1alpha1.BindCluster{}
		c.Name = "dns"
		c.Spec.Ports.DNS = tc.dnsPort
		in := Input{Cluster: c, ControlKey: TSIGKey{Name: "ctl", Secret: "c2VjcmV0"}}
		cl, err := ZoneClause(in, zone, ZoneRolePrimary, tc.targets)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cl, tc.want) {
			t.Errorf("port %d, targets %v: clause %s, want %s", tc.dnsPort, tc.targets, cl, tc.want)
		}
	}
	c := &bindv1alpha1.BindCluster{}
	for _, bad := range []string{"127.0.0.1:0", "example.com:53", "1.2.3.4; }"} {
		if _, err := ZoneClause(Input{Cluster: c, ControlKey: TSIGKey{Name: "ctl", Secret: "c2VjcmV0"}}, zone, ZoneRolePrimary, []string{bad}); err == nil {
			t.Errorf("also-notify %q accepted", bad)
		}
	}
}
