package reconcileutil

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func testDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := bindv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := tolerantCodecs{serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)}, scheme}
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	return codecs.DecoderToVersion(info.Serializer, bindv1alpha1.GroupVersion)
}

const (
	goodZone = `{"apiVersion":"bind.unkin.net/v1alpha1","kind":"BindZone","metadata":{"name":"good","namespace":"dns","uid":"1","generation":1},
 "spec":{"clusterRef":{"name":"c"},"zoneName":"good.example","type":"Primary"}}`
	// Written for the earlier operator: clusterRef and allowTransfer in
	// its shapes, the rest in this one's.
	legacyZone = `{"apiVersion":"bind.unkin.net/v1alpha1","kind":"BindZone","metadata":{"name":"legacy","namespace":"dns","uid":"2","generation":3},
 "spec":{"clusterRef":"c","zoneName":"legacy.example","type":"Primary","allowTransfer":["any"]},
 "status":{"observedGeneration":2}}`
)

// TestTolerantDecoderListsAroundAnObjectThatDoesNotDecode: a LIST with
// one object in an earlier shape decodes; that object is a marked
// stand-in with what decodes of it, and Rechecks refuses it by name.
func TestTolerantDecoderListsAroundAnObjectThatDoesNotDecode(t *testing.T) {
	g := NewWithT(t)
	dec := testDecoder(t)
	list := []byte(`{"apiVersion":"bind.unkin.net/v1alpha1","kind":"BindZoneList","metadata":{"resourceVersion":"42"},"items":[` + goodZone + `,` + legacyZone + `]}`)

	// The typed decoder alone fails the whole LIST.
	plain := serializer.NewCodecFactory(func() *runtime.Scheme {
		s := runtime.NewScheme()
		g.Expect(bindv1alpha1.AddToScheme(s)).To(Succeed())
		return s
	}()).UniversalDeserializer()
	_, _, err := plain.Decode(list, nil, &bindv1alpha1.BindZoneList{})
	g.Expect(err).To(HaveOccurred())

	into := &bindv1alpha1.BindZoneList{}
	_, _, err = dec.Decode(list, nil, into)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(into.ResourceVersion).To(Equal("42"))
	g.Expect(into.Items).To(HaveLen(2))
	good, legacy := &into.Items[0], &into.Items[1]
	g.Expect(undecodable(good)).To(BeEmpty())
	g.Expect(legacy.Name).To(Equal("legacy"))
	g.Expect(legacy.UID).To(BeEquivalentTo("2"))
	g.Expect(legacy.Spec.ZoneName).To(BeEquivalentTo("legacy.example"), "the fields that decode are kept")
	g.Expect(legacy.Spec.ClusterRef.Name).To(BeEmpty())
	g.Expect(legacy.Status.ObservedGeneration).To(BeEquivalentTo(2), "its status, to write conditions on")
	g.Expect(undecodable(legacy)).To(HavePrefix("spec.allowTransfer, spec.clusterRef: json: cannot unmarshal"))

	rc := NewRechecks(func(client.Object) field.ErrorList { return nil })
	g.Expect(rc.Check(good)).To(BeEmpty())
	g.Expect(rc.Check(legacy)).To(And(
		ContainSubstring("does not fit this version's schema (spec.allowTransfer, spec.clusterRef:"),
		ContainSubstring("bind-operator import --from-manifests"),
	))
}

// TestTolerantDecoderWatchEvent: one object (a watch event's) decodes
// into a stand-in the same way; a mark its writer set is removed.
func TestTolerantDecoderWatchEvent(t *testing.T) {
	g := NewWithT(t)
	dec := testDecoder(t)
	obj, _, err := dec.Decode([]byte(legacyZone), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(undecodable(obj.(*bindv1alpha1.BindZone))).NotTo(BeEmpty())

	marked := `{"apiVersion":"bind.unkin.net/v1alpha1","kind":"BindZone","metadata":{"name":"m","annotations":{"` + undecodableAnnotation + `":"x","keep":"y"}},"spec":{"zoneName":"m.example"}}`
	obj, _, err = dec.Decode([]byte(marked), nil, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(obj.(*bindv1alpha1.BindZone).Annotations).To(Equal(map[string]string{"keep": "y"}))

	// Not JSON at all, or another group's: the decoder's own error.
	_, _, err = dec.Decode([]byte(`{"apiVersion":`), nil, nil)
	g.Expect(err).To(HaveOccurred())
}

// FuzzTolerantDecoder: whatever the API server sends, the decoder returns
// an object or an error, never a panic.
func FuzzTolerantDecoder(f *testing.F) {
	f.Add([]byte(legacyZone))
	f.Add([]byte(`{"apiVersion":"bind.unkin.net/v1alpha1","kind":"BindZoneList","items":[` + legacyZone + `,{"kind":3}]}`))
	f.Add([]byte(`{"apiVersion":"bind.unkin.net/v1alpha1","kind":"BindZone","metadata":"x"}`))
	dec := testDecoder(&testing.T{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = dec.Decode(b, nil, nil)
		_, _, _ = dec.Decode(b, nil, &bindv1alpha1.BindZoneList{})
	})
}
