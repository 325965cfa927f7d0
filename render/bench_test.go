package render

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"k8s.io/utils/ptr"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// benchInput is a cluster with n of everything that scales: ACLs, views,
// config zones (forward and secondary), runtime primary zones, keys and
// policies. Views hold n/10 zones each so the structure stays realistic.
func benchInput(n int) Input {
	in := scenarioAuthoritative()
	in.Catalogs = nil
	for i := range in.Zones {
		in.Zones[i].Spec.CatalogZoneRef = nil
	}
	in.Zones = nil
	in.Cluster.Spec.TransferKeyRef = ref("transfer")
	views := max(1, n/10)
	for i := range n {
		in.Keys[fmt.Sprintf("key-%d", i)] = TSIGKey{Name: fmt.Sprintf("key-%d", i), Algorithm: "hmac-sha256", Secret: secret32}
		in.ACLs = append(in.ACLs, bindv1alpha1.BindACL{ObjectMeta: meta(fmt.Sprintf("acl-%d", i)), Spec: bindv1alpha1.BindACLSpec{
			Entries: []bindv1alpha1.AddressMatchElement{addr(fmt.Sprintf("198.18.%d.%d/32", i/250%250, i%250)), keyRef(fmt.Sprintf("key-%d", i))},
		}})
	}
	for i := range views {
		in.Views = append(in.Views, bindv1alpha1.BindView{ObjectMeta: meta(fmt.Sprintf("view-%d", i)), Spec: bindv1alpha1.BindViewSpec{
			Order: ptr.To(int32(i % 7)), MatchClients: []bindv1alpha1.AddressMatchElement{aclRef(fmt.Sprintf("acl-%d", i))},
		}})
	}
	in.ViewKeys = viewKeysFor(in.Views)
	for i := range n {
		v := ref(fmt.Sprintf("view-%d", i%views))
		var z bindv1alpha1.BindZone
		switch i % 3 {
		case 0:
			z = primaryZone(fmt.Sprintf("zone-%d", i), fmt.Sprintf("z%d.example", i))
			z.Spec.UpdateKeyRef = ref(fmt.Sprintf("key-%d", i))
		case 1:
			z = bindv1alpha1.BindZone{ObjectMeta: meta(fmt.Sprintf("zone-%d", i)), Spec: bindv1alpha1.BindZoneSpec{
				ZoneName: bindv1alpha1.DomainName(fmt.Sprintf("z%d.example", i)), Type: bindv1alpha1.ZoneForward,
				Forwarders: []bindv1alpha1.Forwarder{{Address: "198.18.0.1"}},
			}}
		case 2:
			z = bindv1alpha1.BindZone{ObjectMeta: meta(fmt.Sprintf("zone-%d", i)), Spec: bindv1alpha1.BindZoneSpec{
				ZoneName: bindv1alpha1.DomainName(fmt.Sprintf("z%d.example", i)), Type: bindv1alpha1.ZoneSecondary,
				Primaries:  []bindv1alpha1.RemoteServer{{Address: "192.0.2.1", KeyRef: ref(fmt.Sprintf("key-%d", i))}},
				AllowQuery: []bindv1alpha1.AddressMatchElement{aclRef(fmt.Sprintf("acl-%d", i))},
			}}
		}
		z.Spec.ViewRef = v
		in.Zones = append(in.Zones, z)
	}
	return in
}

func BenchmarkRender(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		in := benchInput(n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				r, err := Render(in)
				if err != nil {
					b.Fatal(err)
				}
				size = len(r.ConfigData[FilePrimaryConf])
			}
			b.ReportMetric(float64(size), "conf-bytes")
		})
	}
}

func BenchmarkConfigHash(b *testing.B) {
	r, err := Render(benchInput(10000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ConfigHash(r)
	}
}

// The config zones rendered in pieces on every CPU join into the text a
// single CPU writes zone by zone, with and without views; an error is
// the same one.
func TestConfigZonesInParallel(t *testing.T) {
	withViews := benchInput(1000)
	noViews := benchInput(1000)
	noViews.Views, noViews.ViewKeys = nil, nil
	for i := range noViews.Zones {
		noViews.Zones[i].Spec.ViewRef = nil
	}
	broken := benchInput(1000)
	broken.Zones[len(broken.Zones)-1].Spec.Primaries = nil
	broken.Zones[len(broken.Zones)-1].Spec.Type = bindv1alpha1.ZoneSecondary
	for name, in := range map[string]Input{"views": withViews, "no views": noViews, "broken": broken} {
		prev := runtime.GOMAXPROCS(1)
		one, oneErr := Render(in)
		runtime.GOMAXPROCS(max(prev, 4))
		many, manyErr := Render(in)
		runtime.GOMAXPROCS(prev)
		if fmt.Sprint(oneErr) != fmt.Sprint(manyErr) {
			t.Fatalf("%s: one CPU: %v; many: %v", name, oneErr, manyErr)
		}
		if oneErr == nil && !reflect.DeepEqual(one, many) {
			t.Fatalf("%s: the parallel render differs", name)
		}
		if name == "broken" && oneErr == nil {
			t.Fatalf("%s: a secondary zone without primaries rendered", name)
		}
	}
}
