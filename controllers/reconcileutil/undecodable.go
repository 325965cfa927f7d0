package reconcileutil

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Stored objects that no longer decode (docs/behaviours.md, "Stored
// objects are re-checked"). The API server keeps an object as it was
// written: one stored under an earlier schema of the same version (the
// operator this project descends from wrote `clusterRef: r` where this
// API has an object) is served as it is after the CRDs are replaced. A
// typed informer decodes a whole LIST at once, so one such object fails
// every LIST of its kind, the cache never syncs and the manager exits
// after its cache-sync timeout: a crash loop over one object.
//
// The cache's informers for the nine kinds therefore decode with
// tolerantDecoder: an object that does not decode becomes a stand-in with
// its metadata, its status when that decodes, and the spec fields that
// decode one by one, marked in memory with undecodableAnnotation. Rechecks
// refuses a marked object with the decoder's words, so it takes the path
// of every object today's rules refuse: Ready=False (Invalid) where its
// status can be written, a warning event, the bind_operator_invalid_objects
// gauge, left out of every render and never acted on. Everything else is
// served.

// undecodableAnnotation marks a stand-in; its value is why the object
// does not decode. It exists only in the cache: the decoder removes it
// from every object that decodes, so nobody can set it on one.
const undecodableAnnotation = "bind.unkin.net/undecodable"

// maxUndecodable bounds the decoder's words kept on a stand-in.
const maxUndecodable = 1024

// undecodableFix is what the message of a stand-in tells the user to do.
const undecodableFix = "export it (kubectl get -o yaml), convert it with `bind-operator import --from-manifests`, and apply the result (docs/migrating.md)"

// undecodable is why obj is a stand-in for an object that does not
// decode, "" when it is not one.
func undecodable(obj metav1.Object) string {
	return obj.GetAnnotations()[undecodableAnnotation]
}

// undecodableMessage is a stand-in's refusal, as Rechecks reports it.
func undecodableMessage(why string) string {
	return "the stored object does not fit this version's schema (" + why + "): " + undecodableFix
}

// NewInformer is the cache's informer constructor (CacheOptions sets
// it): the nine kinds are listed and watched with a client that decodes
// through tolerantDecoder, every other kind as controller-runtime does.
func NewInformer(cfg *rest.Config) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	scheme := runtime.NewScheme()
	if err := bindv1alpha1.AddToScheme(scheme); err != nil {
		panic(err) // the generated registration cannot fail
	}
	// One HTTP client and one REST mapper for the nine kinds: the mapper
	// reads the group's discovery once, lazily.
	httpClient, setupErr := rest.HTTPClientFor(cfg)
	var mapper meta.RESTMapper
	if setupErr == nil {
		mapper, setupErr = apiutil.NewDynamicRESTMapper(cfg, httpClient)
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		var tl *toolscache.ListWatch
		err := setupErr
		if err == nil {
			tl, err = tolerantListWatch(cfg, httpClient, mapper, scheme, obj)
		}
		if err != nil {
			// The typed informer as controller-runtime builds it: one
			// object that does not decode would stop it, but it lists.
			log.Log.WithName("cache").Error(err, "listing without tolerant decoding", "type", fmt.Sprintf("%T", obj))
		}
		if tl != nil {
			lw = tl
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
}

// tolerantListWatch lists and watches obj's kind across namespaces,
// decoding through tolerantDecoder; nil for a kind outside the nine.
func tolerantListWatch(cfg *rest.Config, httpClient *http.Client, mapper meta.RESTMapper, scheme *runtime.Scheme, obj runtime.Object) (*toolscache.ListWatch, error) {
	if o, ok := obj.(client.Object); !ok || recheckKind(o) == "" {
		return nil, nil
	}
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return nil, fmt.Errorf("no kind for %T: %v", obj, err)
	}
	gvk := gvks[0]
	listObj, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, err
	}
	// The resource's name as the API server serves it: guessing it from
	// the kind gets BindTSIGKey wrong ("bindtsigkeies").
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	gv := gvk.GroupVersion()
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.NegotiatedSerializer = tolerantCodecs{serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(scheme)}, scheme}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, err
	}
	resource := mapping.Resource
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := listObj.DeepCopyObject()
			return list, client.Get().Resource(resource.Resource).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(list)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			opts.AllowWatchBookmarks = true
			return client.Get().Resource(resource.Resource).VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
		},
	}, nil
}

// tolerantCodecs hands out tolerantDecoders: for a LIST's body and for
// each object of a watch stream.
type tolerantCodecs struct {
	runtime.NegotiatedSerializer
	scheme *runtime.Scheme
}

func (t tolerantCodecs) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return tolerantDecoder{inner: t.NegotiatedSerializer.DecoderToVersion(d, gv), scheme: t.scheme}
}

// tolerantDecoder decodes as inner does; where that fails on a LIST of
// the nine kinds or one of their objects, it decodes each item alone and
// replaces the ones that fail with stand-ins.
type tolerantDecoder struct {
	inner  runtime.Decoder
	scheme *runtime.Scheme
}

func (d tolerantDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := d.inner.Decode(data, defaults, into)
	if err == nil {
		if o, ok := obj.(metav1.Object); ok && undecodable(o) != "" {
			unmark(o)
		}
		return obj, gvk, nil
	}
	var tm metav1.TypeMeta
	if json.Unmarshal(data, &tm) != nil {
		return nil, gvk, err
	}
	got := tm.GroupVersionKind()
	if got.Empty() && defaults != nil {
		got = *defaults
	}
	if got.GroupVersion() != bindv1alpha1.GroupVersion || !d.scheme.Recognizes(got) {
		return nil, gvk, err
	}
	var out runtime.Object
	var derr error
	switch {
	case strings.HasSuffix(got.Kind, "List"):
		out, derr = d.decodeList(data, got, into)
	case into == nil:
		out, derr = d.standIn(data, got, err)
	default:
		// A Get decodes into the caller's object; the informers never
		// do, and a stand-in there would be a new object nobody reads.
		derr = err
	}
	if derr != nil {
		return nil, gvk, err
	}
	return out, &got, nil
}

// decodeList decodes a LIST item by item, into into when it is set (the
// informer's List decodes into a list of the kind).
func (d tolerantDecoder) decodeList(data []byte, gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, error) {
	var raw struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta   `json:"metadata"`
		Items           []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	list := into
	if list == nil {
		var err error
		if list, err = d.scheme.New(gvk); err != nil {
			return nil, err
		}
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	la.SetResourceVersion(raw.Metadata.ResourceVersion)
	la.SetContinue(raw.Metadata.Continue)
	la.SetRemainingItemCount(raw.Metadata.RemainingItemCount)
	itemGVK := gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List"))
	items := make([]runtime.Object, 0, len(raw.Items))
	for _, it := range raw.Items {
		o, _, err := d.Decode(it, &itemGVK, nil)
		if err != nil {
			return nil, err
		}
		items = append(items, o)
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	return list, nil
}

// standIn is what the cache holds for an object of gvk that does not
// decode (why): its metadata, its status if that decodes, each spec field
// that decodes alone, and the mark.
func (d tolerantDecoder) standIn(data []byte, gvk schema.GroupVersionKind, why error) (runtime.Object, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	var spec map[string]json.RawMessage
	_ = json.Unmarshal(doc["spec"], &spec)
	// The metadata must decode: a stand-in without name and UID cannot
	// be reported on.
	base := map[string]json.RawMessage{}
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		base[k] = doc[k]
	}
	obj, err := d.decodeWith(gvk, base)
	if err != nil {
		return nil, err
	}
	if st, ok := doc["status"]; ok {
		if o, err := d.decodeWith(gvk, with(base, "status", st)); err == nil {
			base["status"], obj = st, o
		}
	}
	kept := map[string]json.RawMessage{}
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(spec)) {
		one, _ := json.Marshal(map[string]json.RawMessage{k: spec[k]})
		if _, err := d.decodeWith(gvk, with(base, "spec", one)); err != nil {
			bad = append(bad, "spec."+k)
			continue
		}
		kept[k] = spec[k]
	}
	if len(kept) > 0 {
		s, _ := json.Marshal(kept)
		if o, err := d.decodeWith(gvk, with(base, "spec", s)); err == nil {
			obj = o
		}
	}
	msg := why.Error()
	if len(bad) > 0 {
		msg = strings.Join(bad, ", ") + ": " + msg
	}
	o := obj.(metav1.Object)
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[undecodableAnnotation] = agent.BoundTo(msg, maxUndecodable)
	o.SetAnnotations(a)
	// Logged at each LIST or watch event that brings it: the reconcilers
	// report it on the object, and this line is for what they cannot.
	log.Log.WithName("cache").Info("a stored object does not fit this version's schema: it is reported Invalid and left out; "+undecodableFix,
		"kind", gvk.Kind, "namespace", o.GetNamespace(), "name", o.GetName(), "error", a[undecodableAnnotation])
	return obj, nil
}

// decodeWith decodes doc, a JSON object of top-level fields, as inner
// does.
func (d tolerantDecoder) decodeWith(gvk schema.GroupVersionKind, doc map[string]json.RawMessage) (runtime.Object, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	obj, _, err := d.inner.Decode(b, &gvk, nil)
	return obj, err
}

// with is doc with k set to v, doc itself unchanged.
func with(doc map[string]json.RawMessage, k string, v json.RawMessage) map[string]json.RawMessage {
	out := maps.Clone(doc)
	out[k] = v
	return out
}

// unmark removes a mark an object's writer set: only the decoder marks.
func unmark(o metav1.Object) {
	a := o.GetAnnotations()
	delete(a, undecodableAnnotation)
	o.SetAnnotations(a)
}
