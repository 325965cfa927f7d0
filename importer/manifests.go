package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/namedconf"
)

// This file converts manifests written for the operator this project
// descends from (same group and version, other shapes) into this API:
// string references ("clusterRef: r") become objects ({name: r}), string
// lists of address_match_list elements, forwarders and primaries become
// structured elements, lowercase zone types are capitalised, a zone's
// dynamicUpdate decides whether its updateKeyRef stays, and a key's
// clusterRef goes (keys belong to their namespace). Whatever this API has
// no field for is reported and left out; what remains is decoded strictly.

// refFields are the references the old API wrote as bare names.
var refFields = []string{"clusterRef", "transferKeyRef", "updateKeyRef", "dnssecPolicyRef", "catalogZoneRef", "viewRef", "zoneRef"}

// matchListFields are the address_match_list fields, wherever they are.
var matchListFields = []string{"allowTransfer", "allowQuery", "matchClients", "matchDestinations", "allowRecursion", "entries"}

// maxDecodeRounds bounds the unknown-field removals of one object.
const maxDecodeRounds = 64

// ConvertManifests converts every document of data (YAML or JSON, "---"
// separated, a List's items too; file names it in the report). Documents
// of other API groups are reported and left out.
func ConvertManifests(file string, data []byte) (*Result, error) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	res := &Result{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		if len(obj) == 0 {
			continue
		}
		// `kubectl get -o yaml` of several objects writes one List.
		objs := []map[string]any{obj}
		if items, ok := obj["items"].([]any); ok && obj["kind"] == "List" {
			objs = objs[:0]
			for _, it := range items {
				if o, ok := it.(map[string]any); ok {
					objs = append(objs, o)
				}
			}
		}
		for _, o := range objs {
			m := &manifest{file: file, doc: doc, obj: o, report: &res.Report}
			if c := m.convert(scheme); c != nil {
				res.Objects = append(res.Objects, c)
			}
		}
	}
	return res, nil
}

type manifest struct {
	file   string
	doc    int
	obj    map[string]any
	report *Report
}

func (m *manifest) name() string {
	md, _ := m.obj["metadata"].(map[string]any)
	kind, _ := m.obj["kind"].(string)
	name, _ := md["name"].(string)
	return kind + " " + name
}

func (m *manifest) pos() Pos { return Pos{File: fmt.Sprintf("%s#%d", m.file, m.doc)} }

func (m *manifest) omit(what, why string, args ...any) {
	m.report.omit(m.pos(), m.name()+": "+what, why, args...)
}

func (m *manifest) replace(what, why string, args ...any) {
	m.report.replace(m.pos(), m.name()+": "+what, why, args...)
}

func (m *manifest) convert(scheme *runtime.Scheme) client.Object {
	apiVersion, _ := m.obj["apiVersion"].(string)
	kind, _ := m.obj["kind"].(string)
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	if gvk.GroupVersion() != v1.GroupVersion || !scheme.Recognizes(gvk) {
		m.omit("the object", "it is not one of this API's kinds (%s): apply it as it is if you still need it", v1.GroupVersion)
		return nil
	}
	// What the API server wrote: a stored object exported with
	// `kubectl get -o yaml` carries it.
	var written []string
	if _, ok := m.obj["status"]; ok {
		delete(m.obj, "status")
		written = append(written, "status")
	}
	if md, ok := m.obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink", "finalizers", "ownerReferences"} {
			if _, ok := md[k]; ok {
				delete(md, k)
				written = append(written, "metadata."+k)
			}
		}
		if a, ok := md["annotations"].(map[string]any); ok {
			const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
			if _, ok := a[lastApplied]; ok {
				delete(a, lastApplied)
				written = append(written, "metadata.annotations."+lastApplied)
			}
		}
	}
	if len(written) > 0 {
		m.replace(strings.Join(written, ", "), "written by the API server and the operator, not by you: left out")
	}
	spec, _ := m.obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		m.obj["spec"] = spec
	}
	if kind == "BindTSIGKey" {
		if _, ok := spec["clusterRef"]; ok {
			delete(spec, "clusterRef")
			m.replace("spec.clusterRef", "a key belongs to its namespace: the clusters that use it name it")
		}
	}
	eachMap("spec", spec, m.refs)
	eachMap("spec", spec, m.lists)
	eachMap("spec", spec, m.enums)
	switch kind {
	case "BindZone":
		m.zone(spec)
	case "DNSRecord":
		if t, ok := spec["type"].(string); ok && strings.ToUpper(t) != t {
			spec["type"] = strings.ToUpper(t)
			m.changed("spec.type", t, spec["type"])
		}
	}
	return m.decode(scheme, gvk)
}

// titleEnums are enum fields the old API wrote in lowercase.
var titleEnums = []string{"mode", "forwardPolicy", "dnssecValidation"}

// eachMap calls f with every object inside v and its path (spec,
// spec.recursion, spec.records[2]), outermost first, keys in order so the
// report is the same on every run.
func eachMap(path string, v any, f func(string, map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(path, x)
		for _, k := range sortedKeys(x) {
			eachMap(path+"."+k, x[k], f)
		}
	case []any:
		for i, c := range x {
			eachMap(fmt.Sprintf("%s[%d]", path, i), c, f)
		}
	}
}

func sortedKeys(x map[string]any) []string {
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// changed reports that the field at path, written as from, is now to.
func (m *manifest) changed(path string, from, to any) {
	m.report.converted(m.pos(), m.name()+": "+path, "%s is now %s", compact(from), compact(to))
}

// maxShown bounds a value shown in the report.
const maxShown = 200

// compact is v as one line of JSON, bounded.
func compact(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > maxShown {
		return string(b[:maxShown]) + "…"
	}
	return string(b)
}

// enums capitalises an object's lowercase enums ("authoritative" →
// "Authoritative").
func (m *manifest) enums(path string, x map[string]any) {
	for _, k := range titleEnums {
		if s, ok := x[k].(string); ok && s != "" {
			if t := strings.ToUpper(s[:1]) + strings.ToLower(s[1:]); t != s {
				x[k] = t
				m.changed(path+"."+k, s, t)
			}
		}
	}
}

// refs turns an object's bare-name references into {name: ...}.
func (m *manifest) refs(path string, x map[string]any) {
	for _, f := range refFields {
		if s, ok := x[f].(string); ok {
			x[f] = map[string]any{"name": s}
			m.changed(path+"."+f, s, x[f])
		}
	}
}

// lists converts an object's string lists into this API's elements. A
// list with an element that is not one is left out whole, as the
// named.conf import does: a partial list would match other clients.
func (m *manifest) lists(path string, x map[string]any) {
	for _, k := range sortedKeys(x) {
		items, ok := stringList(x[k])
		if !ok {
			continue
		}
		var out []any
		var why string
		switch {
		case slices.Contains(matchListFields, k):
			out, why = convertEach(items, func(w []Word) (any, string) {
				// Names are the objects' names; one that is not an
				// address or built-in is an ACL, as named reads it.
				same := func(name string) string { return name }
				return element(w, same, same)
			})
		case k == "forwarders":
			out, why = convertEach(items, func(w []Word) (any, string) {
				rs, why := server(w, nil)
				return v1.Forwarder{Address: rs.Address, Port: rs.Port}, why
			})
		case k == "primaries" || k == "masters" || k == "defaultPrimaries":
			out, why = convertEach(items, func(w []Word) (any, string) {
				return server(w, func(name string) string { return name })
			})
		default:
			continue
		}
		if why != "" {
			delete(x, k)
			m.omit(path+"."+k, "%s: the list is left out", why)
			continue
		}
		x[k] = out
		m.changed(path+"."+k, items, out)
	}
	if ps, ok := x["masters"]; ok {
		delete(x, "masters")
		x["primaries"] = ps
		m.report.converted(m.pos(), m.name()+": "+path+".masters", "renamed %s.primaries", path)
	}
}

// convertEach reads each string as named.conf words and converts it into
// this API's JSON form; the first that fails says why.
func convertEach(items []string, conv func([]Word) (any, string)) ([]any, string) {
	out := make([]any, 0, len(items))
	for _, it := range items {
		w := words(it)
		if w == nil {
			return nil, fmt.Sprintf("%q is not one element", it)
		}
		v, why := conv(w)
		if why != "" {
			return nil, why
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err.Error()
		}
		var u map[string]any
		if err := json.Unmarshal(b, &u); err != nil {
			return nil, err.Error()
		}
		out = append(out, u)
	}
	return out, ""
}

// stringList is the list's items when it is a non-empty list of strings.
func stringList(v any) ([]string, bool) {
	l, ok := v.([]any)
	if !ok || len(l) == 0 {
		return nil, false
	}
	out := make([]string, len(l))
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// words reads one element as named.conf would ("! key \"k\"" is three
// words); nil when it is not one statement of words.
func words(s string) []Word {
	st, err := namedconf.Parse("", strings.TrimSuffix(strings.TrimSpace(s), ";")+";")
	if err != nil || len(st) != 1 || st[0].HasBlock || len(st[0].Tail) > 0 {
		return nil
	}
	return st[0].Words
}

// zone: the type's case, and dynamicUpdate.
func (m *manifest) zone(spec map[string]any) {
	if t, ok := spec["type"].(string); ok {
		to := t
		switch strings.ToLower(t) {
		case "primary", "master":
			to = string(v1.ZonePrimary)
		case "secondary", "slave":
			to = string(v1.ZoneSecondary)
		case "forward":
			to = string(v1.ZoneForward)
		case "stub":
			to = string(v1.ZoneStub)
		}
		if to != t {
			spec["type"] = to
			m.changed("spec.type", t, to)
		}
	}
	du, has := spec["dynamicUpdate"]
	if !has {
		return
	}
	delete(spec, "dynamicUpdate")
	if on, _ := du.(bool); on {
		if _, ok := spec["updateKeyRef"]; !ok {
			m.omit("spec.dynamicUpdate", "updates were on without an update key; this API takes signed updates only: set spec.updateKeyRef to a BindTSIGKey")
		} else {
			m.replace("spec.dynamicUpdate", "spec.updateKeyRef alone allows the key's updates")
		}
		return
	}
	if _, ok := spec["updateKeyRef"]; ok {
		delete(spec, "updateKeyRef")
		m.replace("spec.updateKeyRef", "updates were off (dynamicUpdate: false), and an updateKeyRef would allow them: left out")
	}
}

// unknownField is sigs.k8s.io/json's strict error for a field the type
// does not have.
var unknownField = regexp.MustCompile(`^unknown field "([^"]+)"$`)

// decode decodes the converted object strictly into its type, leaving out
// (and reporting) each field the type does not have.
func (m *manifest) decode(scheme *runtime.Scheme, gvk schema.GroupVersionKind) client.Object {
	for range maxDecodeRounds {
		raw, err := yaml.Marshal(m.obj)
		if err != nil {
			m.omit("the object", "%v", err)
			return nil
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			m.omit("the object", "%v", err)
			return nil
		}
		ro, err := scheme.New(gvk)
		if err != nil {
			m.omit("the object", "%v", err)
			return nil
		}
		strict, err := sigsjson.UnmarshalStrict(js, ro, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
		if err != nil {
			m.omit("the object", "it does not fit this API's %s: %v", gvk.Kind, err)
			return nil
		}
		removed := false
		for _, e := range strict {
			f := unknownField.FindStringSubmatch(e.Error())
			if f == nil {
				m.omit("the object", "it does not fit this API's %s: %v", gvk.Kind, e)
				return nil
			}
			if deletePath(m.obj, f[1]) {
				m.omit(f[1], "this API's %s has no such field", gvk.Kind)
				removed = true
			}
		}
		if !removed {
			o := ro.(client.Object)
			o.GetObjectKind().SetGroupVersionKind(gvk)
			return o
		}
	}
	m.omit("the object", "too many fields this API does not have")
	return nil
}

// deletePath removes a dotted path ("spec.foo", "spec.items[2].bar").
func deletePath(obj map[string]any, p string) bool {
	parts := strings.Split(p, ".")
	var cur any = obj
	for i, part := range parts {
		idx := -1
		if j := strings.IndexByte(part, '['); j >= 0 && strings.HasSuffix(part, "]") {
			if _, err := fmt.Sscanf(part[j:], "[%d]", &idx); err != nil {
				return false
			}
			part = part[:j]
		}
		mm, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if i == len(parts)-1 && idx < 0 {
			_, had := mm[part]
			delete(mm, part)
			return had
		}
		cur = mm[part]
		if idx >= 0 {
			l, ok := cur.([]any)
			if !ok || idx >= len(l) {
				return false
			}
			cur = l[idx]
		}
	}
	return false
}
