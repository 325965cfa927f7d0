package zones

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// TestSerialRaisedOnlyWhenThePrimaryIsStillBehind: the zone's look reads
// the primary's serial before the secondaries'. A secondary that
// transferred a newer serial in between is no sign of lost data: the
// primary, read again, serves it, and nothing is raised or reported. A
// primary still older than a secondary when read again is raised past it,
// with a warning event.
func TestSerialRaisedOnlyWhenThePrimaryIsStillBehind(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const zoneName = "race.test."
	upd := bindtest.NewKey("upd", "hmac-sha256")
	srv := bindtest.Start(t, bindtest.Options{
		Keys:   []bindtest.Key{upd},
		Files:  map[string]string{"race.db": bindtest.SeedZone(zoneName, 10)},
		Config: `zone "race.test" { type primary; file "race.db"; allow-update { key "upd"; }; };`,
	})
	key, err := dnsclient.NewKey(upd.Name, upd.Algorithm, upd.Secret)
	g.Expect(err).NotTo(HaveOccurred())
	recorder := events.NewFakeRecorder(10)
	r := &BindZoneReconciler{Recorder: recorder}
	tgt := &zoneTarget{zoneName: zoneName, srv: clusterpods.ZoneServer{Addr: srv.DNSAddr, Key: key}}
	zone := &bindv1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: "dns", Name: "race"}}
	look := func(primary, secondary int64) *bindv1alpha1.BindZoneStatus {
		return &bindv1alpha1.BindZoneStatus{Serial: ptr.To(primary), Secondaries: []bindv1alpha1.SecondaryZoneStatus{{Pod: "dns-1", Serial: ptr.To(secondary)}}}
	}
	serving := func() uint32 {
		s, err := clusterpods.SOASerial(ctx, srv.DNSAddr, nil, zoneName)
		g.Expect(err).NotTo(HaveOccurred())
		return s
	}

	// Read at 8, then a secondary that transferred 10, which the primary
	// serves by now: nothing raised, nothing reported, and the serials
	// are to be read again (the look's are stale).
	again, err := r.catchUpSerial(ctx, zone, tgt, look(8, 10))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeTrue())
	g.Expect(serving()).To(Equal(uint32(10)), "a secondary that caught up with the primary between the two reads")
	g.Expect(recorder.Events).To(BeEmpty())

	// A secondary at 12 while the primary serves 10: it lost its data.
	again, err = r.catchUpSerial(ctx, zone, tgt, look(10, 12))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeTrue())
	g.Expect(serving()).To(Equal(uint32(13)))
	g.Expect(recorder.Events).To(Receive(HavePrefix("Warning SerialBehind the primary served serial 10 while a secondary served 12")))
}
