package zones

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// TestDriftCheckHoldsOnlyTheSetsItChecks: the drift check streams the
// zone's AXFR and keeps only the sets asked for, so a BindZone with two
// declared sets in a zone of 20,000 names holds two sets, not the zone.
func TestDriftCheckHoldsOnlyTheSetsItChecks(t *testing.T) {
	g := NewWithT(t)
	const zone = "big.test."
	var zf strings.Builder
	zf.WriteString(bindtest.SeedZone(zone, 7))
	for i := range 20000 {
		fmt.Fprintf(&zf, "h%05d IN A 198.18.%d.%d\n", i, i/256, i%256)
	}
	zf.WriteString("www 600 IN A 198.18.200.2\nwww 600 IN A 198.18.200.1\nmail IN TXT \"v=spf1 -all\"\n")
	var dynZone strings.Builder
	dynZone.WriteString(bindtest.SeedZone("dyn.test.", 1))
	for i := range 200 {
		fmt.Fprintf(&dynZone, "h%d IN A 198.18.1.%d\n", i, i%250+1)
	}
	xfr := bindtest.NewKey("xfr", "hmac-sha256")
	srv := bindtest.Start(t, bindtest.Options{
		Keys:  []bindtest.Key{xfr},
		Files: map[string]string{"big.db": zf.String(), "broken.db": "this is not a zone file\n", "dyn.db": dynZone.String()},
		Config: `zone "big.test" { type primary; file "big.db"; allow-transfer { key "xfr"; }; };
zone "broken.test" { type primary; file "broken.db"; allow-transfer { key "xfr"; }; };
zone "dyn.test" { type primary; file "dyn.db"; allow-transfer { key "xfr"; }; allow-update { key "xfr"; }; };`,
	})
	key, err := dnsclient.NewKey(xfr.Name, xfr.Algorithm, xfr.Secret)
	g.Expect(err).NotTo(HaveOccurred())

	r := &BindZoneReconciler{}
	tgt := &zoneTarget{zoneName: zone, srv: clusterpods.ZoneServer{Addr: srv.DNSAddr, Key: key}}
	want := map[setKey]bool{{"www", "A"}: true, {"mail", "TXT"}: true, {"absent", "A"}: true}
	got, serial, err := r.served(context.Background(), tgt, func(k setKey) bool { return want[k] })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(map[setKey]servedSet{
		{"www", "A"}:    {ttl: 600, values: []string{"198.18.200.1", "198.18.200.2"}},
		{"mail", "TXT"}: {ttl: 300, values: []string{`"v=spf1 -all"`}},
	}))

	// A periodic check of a zone still at the serial of its last full
	// check is one SOA query; a zone without a journal that changed, or
	// one with no check remembered, gets a full check.
	z := &bindv1alpha1.BindZone{Spec: bindv1alpha1.BindZoneSpec{Records: []bindv1alpha1.RecordSet{{Name: "www", Type: "A", Values: []string{"198.18.200.1"}}}}}
	z.UID = "zone-uid"
	st := &bindv1alpha1.BindZoneStatus{ManagedRecords: []bindv1alpha1.ManagedRecordSet{{Name: "mail", Type: "TXT"}}}
	g.Expect(r.untouchedSinceCheck(context.Background(), z, tgt, st)).To(BeFalse(), "no check remembered")
	r.checkedSerials.Store(z.UID, serial)
	g.Expect(r.untouchedSinceCheck(context.Background(), z, tgt, st)).To(BeTrue(), "the serial %d of the last check", serial)
	r.checkedSerials.Store(z.UID, serial-1)
	g.Expect(r.untouchedSinceCheck(context.Background(), z, tgt, st)).To(BeFalse(), "the zone changed since, and keeps no journal")

	// A dynamic zone: changes to sets the zone neither declares nor wrote
	// are read from the journal and cost no full check; a change to one
	// it checks does.
	dyn := &zoneTarget{zoneName: "dyn.test.", srv: clusterpods.ZoneServer{Addr: srv.DNSAddr, Key: key}}
	upd, err := dnsclient.New(srv.DNSAddr, &key, dnsclient.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer upd.Close()
	_, dynSerial, err := r.served(context.Background(), dyn, func(setKey) bool { return false })
	g.Expect(err).NotTo(HaveOccurred())
	r.checkedSerials.Store(z.UID, dynSerial)
	g.Expect(upd.Update(context.Background(), "dyn.test.", dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{Name: "other.dyn.test.", Type: dns.TypeA, TTL: 60, Values: []string{"198.18.9.9"}}})).To(Succeed())
	g.Expect(r.untouchedSinceCheck(context.Background(), z, dyn, st)).To(BeTrue(), "a change to a name the zone does not check")
	again, _ := r.checkedSerials.Load(z.UID)
	g.Expect(again).NotTo(Equal(dynSerial), "the serial read from the journal is remembered")
	g.Expect(upd.Update(context.Background(), "dyn.test.", dnsclient.Change{Op: dnsclient.Upsert, Set: dnsclient.RRSet{Name: "mail.dyn.test.", Type: dns.TypeTXT, TTL: 60, Values: []string{`"changed"`}}})).To(Succeed())
	g.Expect(r.untouchedSinceCheck(context.Background(), z, dyn, st)).To(BeFalse(), "a change to a set the zone wrote")

	// A key the zone does not admit is a refusal, reported as such.
	other, err := dnsclient.NewKey("other", "hmac-sha256", xfr.Secret)
	g.Expect(err).NotTo(HaveOccurred())
	tgt.srv.Key = other
	_, _, err = r.served(context.Background(), tgt, func(setKey) bool { return true })
	var p *problem
	g.Expect(errors.As(err, &p)).To(BeTrue(), "%v", err)
	g.Expect(p.reason).To(Equal(bindv1alpha1.ReasonRecordsRefused), p.msg)

	// A zone named has not loaded answers SERVFAIL: not a refusal, the
	// primary is not ready for it yet, and it is looked at again soon.
	tgt.srv.Key = key
	tgt.zoneName = "broken.test."
	_, _, err = r.served(context.Background(), tgt, func(setKey) bool { return true })
	g.Expect(errors.As(err, &p)).To(BeTrue(), "%v", err)
	g.Expect(p.reason).To(Equal(bindv1alpha1.ReasonPrimaryNotReady), p.msg)
	g.Expect(p.requeue).To(Equal(zoneNotLoadedRetry), p.msg)
	g.Expect(p.msg).To(ContainSubstring("SERVFAIL"))
}
