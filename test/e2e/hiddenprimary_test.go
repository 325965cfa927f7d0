package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestHiddenPrimary (issue 47 item 6): a Debian named on the node's
// address, outside the cluster, is the world-facing secondary of a zone
// the cluster keeps (spec.externalSecondaries, keyed). Before it runs the
// zone says so (Ready False, ExternalSecondaryFailing, its silence in
// status); once it runs it transfers the zone with the key and the zone is
// Served with its serial in status; a change reaches it at once although
// its SOA refresh is an hour, so the keyed NOTIFY did; and the primary
// refuses the same transfer unsigned. The other way round, the same named
// is the keyed primary of a Secondary zone of the cluster: the pod
// transfers it with the key, and the named refuses it unsigned.
func TestHiddenPrimary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-hidden")
	a := authoritative{Namespace: ns, Name: "hidden", Replicas: 1, Catalog: "catalog.hidden.test"}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	testkit.Must(t, env.Client.Create(ctx, &v1.BindTSIGKey{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "outside"},
		Spec:       v1.BindTSIGKeySpec{Algorithm: "hmac-sha256"},
	}))
	key := readTSIGKey(ctx, t, ns, "outside")

	port := testkit.FreePort(t)
	outside := netip.AddrPortFrom(localcluster.NodeIP, uint16(port))
	const zoneName = "hidden.example"
	zone := &v1.BindZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hidden"},
		Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: a.Name},
			ZoneName:   zoneName,
			// An hour: only a NOTIFY brings a change to the secondary
			// within the test.
			SOA:     &v1.SOASpec{PrimaryNameServer: "ns1.example.net", ResponsiblePerson: "hostmaster.example.net", Refresh: ptr.To[int32](3600), Retry: ptr.To[int32](600)},
			Records: []v1.RecordSet{{Name: "@", Type: "NS", Values: []string{"ns1.example.net."}}, {Name: "www", Type: "A", Values: []string{"192.0.2.1"}}},
			ExternalSecondaries: []v1.RemoteServer{{
				Address: outside.Addr().String(), Port: ptr.To(int32(port)),
				KeyRef: &v1.LocalObjectReference{Name: "outside"},
			}},
		},
	}
	testkit.Must(t, env.Client.Create(ctx, zone))
	ips := a.servedByAll(ctx, t, zoneName)

	// Nobody listens there yet: the zone says so, and names the server.
	waitZoneStatus(ctx, t, zone, "ExternalSecondaryFailing with the silent server", func(z *v1.BindZone) error {
		c := meta.FindStatusCondition(z.Status.Conditions, v1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonExternalSecondaryFailing || !strings.Contains(c.Message, outside.String()) {
			return fmt.Errorf("conditions %s", conditions(z.Status.Conditions))
		}
		if len(z.Status.ExternalSecondaries) != 1 || z.Status.ExternalSecondaries[0].InSync || z.Status.ExternalSecondaries[0].Message == "" {
			return fmt.Errorf("status.externalSecondaries %+v", z.Status.ExternalSecondaries)
		}
		return nil
	})
	t.Logf("before the secondary runs: %s", meta.FindStatusCondition(zone.Status.Conditions, v1.ConditionReady).Message)

	// The secondary: it knows the primary pod's address and the key, and
	// takes NOTIFYs from its primary (named's default).
	name := strings.TrimSuffix(key.Name, ".")
	control := testkit.FreePort(t)
	runNamed(t, "outside", t.TempDir(), map[string]string{
		"etc/bind/named.conf": nodeNamedConf(key, control, outside, "", fmt.Sprintf(`zone %q { type secondary; primaries { %s key %q; }; file "hidden.db"; };
zone "upstream.example" { type primary; file "db.upstream"; allow-transfer { key %q; }; };
`, zoneName, ips[0], name, name)),
		"db.upstream": "$TTL 300\n@ IN SOA ns.upstream.example. hm.upstream.example. 5 3600 600 1209600 60\n\tIN NS ns.upstream.example.\nns IN A 192.0.2.53\nshop IN A 192.0.2.54\n",
	}, outside.String(), "127.0.0.1:"+strconv.Itoa(control))

	first := waitSOA(ctx, t, outside.String(), zoneName, "the external secondary")
	waitZoneStatus(ctx, t, zone, "Served, the external secondary in sync", func(z *v1.BindZone) error {
		c := meta.FindStatusCondition(z.Status.Conditions, v1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1.ReasonServed {
			return fmt.Errorf("conditions %s", conditions(z.Status.Conditions))
		}
		if len(z.Status.ExternalSecondaries) != 1 || !z.Status.ExternalSecondaries[0].InSync || z.Status.ExternalSecondaries[0].Server != outside.String() {
			return fmt.Errorf("status.externalSecondaries %+v", z.Status.ExternalSecondaries)
		}
		return nil
	})

	// A change reaches it long before its refresh: by NOTIFY.
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(zone), zone))
	zone.Spec.Records[1].Values = []string{"192.0.2.2"}
	testkit.Must(t, env.Client.Update(ctx, zone))
	start := time.Now()
	waitSerial(ctx, t, outside.String(), zoneName, "the external secondary", first+1)
	waitA(ctx, t, outside.String(), "www."+zoneName, "192.0.2.2", "the external secondary")
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the change took %s to reach the external secondary, whose refresh is an hour: no NOTIFY?", d.Round(time.Second))
	}
	t.Logf("the change reached the external secondary in %s (its SOA refresh: 3600 s)", time.Since(start).Round(time.Millisecond))

	// The primary lets the key transfer the zone, and nobody without it.
	if _, err := zoneRRs(ips[0], zoneName, key); err != nil {
		t.Errorf("AXFR of %s from the primary with the secondary's key: %v", zoneName, err)
	}
	if err := unsignedAXFR(ips[0], zoneName); !refused(err) {
		t.Errorf("an unsigned AXFR of %s from the primary: %v, want REFUSED", zoneName, err)
	}

	// A Secondary zone of the cluster, from the outside named with the key.
	sec := &v1.BindZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "upstream"},
		Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: a.Name},
			ZoneName:   "upstream.example",
			Type:       v1.ZoneSecondary,
			Primaries: []v1.RemoteServer{{
				Address: outside.Addr().String(), Port: ptr.To(int32(port)),
				KeyRef: &v1.LocalObjectReference{Name: "outside"},
			}},
		},
	}
	testkit.Must(t, env.Client.Create(ctx, sec))
	waitZoneStatus(ctx, t, sec, "Transferred", func(z *v1.BindZone) error {
		if c := meta.FindStatusCondition(z.Status.Conditions, v1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("conditions %s", conditions(z.Status.Conditions))
		}
		return nil
	})
	ips = podIPs(ctx, t, ns, a.Name, a.Replicas) // a Secondary zone is configuration: the pod was replaced
	waitA(ctx, t, ips[0], "shop.upstream.example", "192.0.2.54", "hidden-0")
	if _, err := zoneRRs(outside.String(), "upstream.example", key); err != nil {
		t.Errorf("AXFR of upstream.example from the outside named with the key: %v", err)
	}
	if err := unsignedAXFR(outside.String(), "upstream.example"); !refused(err) {
		t.Errorf("an unsigned AXFR of upstream.example from the outside named: %v, want REFUSED", err)
	}
}

// unsignedAXFR transfers zone from server without a key; nil when the
// server gave it.
func unsignedAXFR(server, zone string) error {
	addr, err := guardAddr(server)
	if err != nil {
		return err
	}
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	envelopes, err := (&dns.Transfer{ReadTimeout: 10 * time.Second}).In(m, addr)
	if err != nil {
		return err
	}
	for e := range envelopes {
		if e.Error != nil {
			return e.Error
		}
	}
	return nil
}

// refused says whether a transfer failed because the server refused it
// (not because it could not be reached).
func refused(err error) bool {
	return err != nil && strings.Contains(err.Error(), fmt.Sprintf("rcode: %d", dns.RcodeRefused))
}

// waitZoneStatus waits until check accepts the zone as read back, which
// it leaves in zone.
func waitZoneStatus(ctx context.Context, t *testing.T, zone *v1.BindZone, what string, check func(*v1.BindZone) error) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(zone), zone); err != nil {
			return err
		}
		return check(zone)
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "BindZone %s: %s", zone.Name, what)
}
