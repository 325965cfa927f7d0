package bindcluster

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// Every named stays on loopback, also after a move, and a moved secondary
// is gone from its old address.
func TestLoopbackOnlyAndMove(t *testing.T) {
	c := Start(t, Options{
		Cluster: &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "t"}, Spec: v1.BindClusterSpec{
			Mode: v1.ModeAuthoritative, Replicas: ptr.To(int32(2)), TransferKeyRef: &v1.LocalObjectReference{Name: "transfer"},
		}},
		Keys: map[string]render.TSIGKey{"transfer": render.TSIGKey(bindtest.NewKey("transfer", "hmac-sha256"))},
	})
	if c.Nodes[0].Name != "dns-0" || !c.Nodes[0].Primary || c.Nodes[1].Primary {
		t.Fatalf("nodes: %+v %+v", c.Nodes[0], c.Nodes[1])
	}
	sec := c.Nodes[1]
	old := sec.DNSAddr()
	c.Move(sec)
	if host, _, _ := net.SplitHostPort(sec.DNSAddr()); host != "::1" || sec.DNSAddr() == old {
		t.Fatalf("moved from %s to %s, want [::1] on a new port", old, sec.DNSAddr())
	}
	if _, _, err := (&dns.Client{Timeout: 300 * time.Millisecond}).Exchange(chaos(), old); err == nil {
		t.Errorf("the moved secondary still answers at %s", old)
	}
	for _, n := range c.Nodes {
		for _, f := range []string{render.FilePrimaryConf, render.FileSecondaryConf} {
			b, err := os.ReadFile(filepath.Join(n.Paths.ConfigDir, f))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "any;") {
				t.Errorf("%s %s listens beyond loopback:\n%s", n.Name, f, b)
			}
		}
	}
}

func chaos() *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion("version.bind.", dns.TypeTXT)
	m.Question[0].Qclass = dns.ClassCHAOS
	return m
}
