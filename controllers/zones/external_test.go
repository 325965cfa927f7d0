package zones

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/rechecktest"
)

// fakeSecondary answers on loopback TCP (the operator's queries go over
// TCP) as an external secondary would:
// the zone's SOA at serial, or rcode for everything. It stops with the
// test.
func fakeSecondary(t *testing.T, serial uint32, rcode int) (string, int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{Listener: l, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(q, rcode)
		if rcode == dns.RcodeSuccess {
			m.Authoritative = true
			m.Answer = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 60},
				Ns: "ns.example.net.", Mbox: "hm.example.net.", Serial: serial, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: 60}}
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return "127.0.0.1", int32(l.Addr().(*net.TCPAddr).Port)
}

// silentPort is a loopback TCP port that takes connections and never
// answers.
func silentPort(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// Each external secondary is asked at once and reported in spec order:
// in sync, behind (it answers), refusing and silent (it does not serve
// the zone), and one whose key is missing (never asked).
func TestObserveExternal(t *testing.T) {
	g := NewWithT(t)
	inSyncAddr, inSyncPort := fakeSecondary(t, 7, dns.RcodeSuccess)
	behindAddr, behindPort := fakeSecondary(t, 6, dns.RcodeSuccess)
	refusedAddr, refusedPort := fakeSecondary(t, 0, dns.RcodeRefused)
	silent, silent2 := silentPort(t), silentPort(t)
	zone := &bindv1alpha1.BindZone{}
	zone.Namespace = "ns"
	zone.Spec.ExternalSecondaries = []bindv1alpha1.RemoteServer{
		{Address: inSyncAddr, Port: ptr.To(inSyncPort)},
		{Address: behindAddr, Port: ptr.To(behindPort)},
		{Address: refusedAddr, Port: ptr.To(refusedPort)},
		{Address: "127.0.0.1", Port: ptr.To(silent)},
		{Address: "127.0.0.1", Port: ptr.To(silent2)},
		{Address: "127.0.0.1", Port: ptr.To(inSyncPort), KeyRef: &bindv1alpha1.LocalObjectReference{Name: "gone"}},
	}
	r := &BindZoneReconciler{Client: fake.NewClientBuilder().WithScheme(rechecktest.Scheme(t)).Build()}
	status := &bindv1alpha1.BindZoneStatus{Serial: ptr.To[int64](7)}
	failing, behind := r.observeExternal(context.Background(), zone, status, "example.com")

	st := status.ExternalSecondaries
	g.Expect(st).To(HaveLen(6))
	g.Expect(st[0].Server).To(Equal(net.JoinHostPort(inSyncAddr, strconv.Itoa(int(inSyncPort)))))
	g.Expect(st[0].InSync).To(BeTrue(), "%+v", st[0])
	g.Expect(st[0].Serial).To(Equal(ptr.To[int64](7)))
	g.Expect(st[0].Message).To(BeEmpty())
	g.Expect(st[1].InSync).To(BeFalse())
	g.Expect(st[1].Serial).To(Equal(ptr.To[int64](6)))
	g.Expect(st[1].Message).To(Equal("serves serial 6, the primary 7"))
	g.Expect(st[2].Serial).To(BeNil())
	g.Expect(st[2].Message).To(ContainSubstring("REFUSED"))
	g.Expect(st[3].Serial).To(BeNil())
	g.Expect(st[3].Message).To(ContainSubstring("it does not serve the zone"))
	g.Expect(st[4].Serial).To(BeNil())
	g.Expect(st[5].Message).To(ContainSubstring(`BindTSIGKey "gone"`))
	g.Expect(behind).To(ConsistOf(ContainSubstring("serves serial 6")))
	g.Expect(failing).To(HaveLen(4))

	// Without a serial of the primary there is nothing to compare with.
	status = &bindv1alpha1.BindZoneStatus{ExternalSecondaries: st}
	failing, behind = r.observeExternal(context.Background(), zone, status, "example.com")
	g.Expect(failing).To(BeEmpty())
	g.Expect(behind).To(BeEmpty())
	g.Expect(status.ExternalSecondaries).To(BeEmpty())
}
