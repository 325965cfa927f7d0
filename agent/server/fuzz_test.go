package server

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	"git.unkin.net/unkin/bind-operator/render"
)

// FuzzEnsureRequest feeds arbitrary bodies to the ensure and batch
// handlers' decoding and validation. The agent has no named behind it (the
// control address is closed), so anything that passes validation ends in a
// 503; nothing panics, every answer is JSON with a status from the
// documented set, and an accepted request's names and file stay inside the
// data directory.
//
//	go test -fuzz FuzzEnsureRequest -fuzztime 30s ./agent/server/
func FuzzEnsureRequest(f *testing.F) {
	paths := render.Paths{ConfigDir: "/c", KeysDir: "/k", DataDir: "/d"}
	seed := func(r agent.EnsureZoneRequest) []byte { b, _ := json.Marshal(r); return b }
	f.Add(seed(agent.EnsureZoneRequest{Zone: "a.test", Clause: `{ type primary; file "/d/zones/_default/a.test.db"; };`, Seed: "x"}))
	f.Add(seed(agent.EnsureZoneRequest{View: "v", Zone: "a.test", Clause: `{ type secondary; file "/d/s/a.db"; primaries { 198.18.0.1; }; };`}))
	f.Add([]byte(`{"zones":[{"zone":"a.test","clause":"{ type primary; };"}]}`))
	f.Add([]byte(`{"zone":"a\".test","clause":"{ }; include \"/etc/passwd\";"}`))
	st, err := openStore(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	a := &Agent{
		store:   st,
		cfg:     Config{Paths: paths, ControlAddr: "127.0.0.1:1"},
		log:     discardLogger(),
		api:     &session{addr: "127.0.0.1:1", keyFile: "/nonexistent"},
		metrics: newAgentMetrics(nopRegisterer{}, func() int { return 0 }),
		ready:   newReadiness(),
	}
	h := a.apiHandler()
	f.Fuzz(func(t *testing.T, body []byte) {
		var req agent.EnsureZoneRequest
		if json.Unmarshal(body, &req) == nil {
			if op, err := a.checkEnsure(req); err == nil {
				if op.clause.File != "" && !strings.HasPrefix(op.clause.File, "/d/") {
					t.Fatalf("accepted file %q outside the data dir", op.clause.File)
				}
				if strings.ContainsAny(op.ref.Zone+op.ref.View, "\"{}; \\/\n") {
					t.Fatalf("accepted names %+v", op.ref)
				}
			}
		}
		for _, path := range []string{agent.PathEnsure, agent.PathEnsureBatch} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
			switch {
			case rec.Code == 200 && path == agent.PathEnsureBatch && strings.Contains(rec.Body.String(), `"results":[]`):
				continue // an empty batch
			case rec.Code == 400, rec.Code == 413, rec.Code == 422, rec.Code == 503:
			default:
				t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
			}
			var er agent.ErrorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Error == "" {
				t.Fatalf("%s: body %q", path, rec.Body)
			}
		}
	})
}

// FuzzOwnersRequest feeds arbitrary bodies to the owners handlers: the
// push, the read of one zone and the list. Nothing panics; every answer is
// JSON with a status from the documented set, an error's with a message,
// and no larger than the client reads. A push the agent takes reads back
// as validate.Owners makes it (values unchanged, in order) and is listed;
// and judge answers about the names it and the background hold, their
// children and parents, exactly as modelJudge does from the stored
// requests, before and after it is forgotten.
//
// A background zone ("test", key "updates", owning owned.a.test A) gives
// judge a parent zone, which a push may shadow with a child zone (with
// its keys, another key or none; in its view or another); each push is
// forgotten after its checks (and the background stored again if the push
// replaced it), so the stored state stays that one zone.
//
//	go test -fuzz FuzzOwnersRequest -fuzztime 30s ./agent/server/
func FuzzOwnersRequest(f *testing.F) {
	seed := func(v any) []byte { b, _ := json.Marshal(v); return b }
	f.Add(seed(agent.OwnersRequest{Zone: "a.test", UpdateKeys: []string{"Updates."}, Sets: []agent.OwnedSet{{Name: "WWW.a.test.", Type: "a", Values: []string{"192.0.2.1", "192.0.2.2"}}}}))
	f.Add(seed(agent.OwnersRequest{View: "inside", Zone: "A.test.", UpdateKeys: []string{}, Sets: []agent.OwnedSet{{Name: "owned.a.test", Type: "A"}, {Name: "txt.a.test", Type: "TXT", Values: []string{`"some text" "<more>"`}}}}))
	f.Add(seed(agent.OwnersRequest{Zone: "a.test", Sets: []agent.OwnedSet{{Name: "owned.a.test", Type: "A", Values: []string{"198.18.0.1"}}}}))
	f.Add(seed(agent.OwnersRequest{Zone: "test", UpdateKeys: []string{"other"}}))
	f.Add(seed(agent.OwnersRequest{Zone: "a.test", UpdateKeys: []string{"other"}, Sets: []agent.OwnedSet{{Name: "api.a.test", Type: "CNAME"}}}))
	f.Add(seed(agent.OwnersRequest{Zone: "a.test", UpdateKeys: []string{"other", "UPDATES"}, Sets: []agent.OwnedSet{{Name: "api.a.test", Type: "CNAME"}}}))
	f.Add(seed(agent.OwnersRequest{View: "inside", Zone: "a.test", UpdateKeys: []string{"updates"}, Sets: []agent.OwnedSet{{Name: "owned.a.test", Type: "A"}}}))
	f.Add(seed(agent.OwnersRequest{Zone: "test", Sets: []agent.OwnedSet{{Name: "test", Type: "0"}}})) // replaces the background
	f.Add(seed(agent.ZoneRef{Zone: "test"}))
	f.Add(seed(agent.ZoneRef{View: "inside", Zone: "nothing.test"}))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"zone":"a.test","updateKeys":[],"sets":[{"name":"a.test","type":"TXT","values":["x\u0000"]}]}`))
	f.Add([]byte(`{"view":"../x","zone":"a.test"}`))
	o, err := openOwners(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	background := agent.OwnersRequest{Zone: "test", UpdateKeys: []string{"updates"}, Sets: []agent.OwnedSet{{Name: "owned.a.test", Type: "A", Values: []string{"198.18.0.1"}}}}
	if err := o.store(background); err != nil {
		f.Fatal(err)
	}
	a := &Agent{owners: o, log: discardLogger(), metrics: newAgentMetrics(nopRegisterer{}, func() int { return 0 }), ready: newReadiness()}
	h := a.apiHandler()
	post := func(t *testing.T, path string, body []byte, codes ...int) *httptest.ResponseRecorder {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if !slices.Contains(codes, rec.Code) {
			t.Fatalf("%s: status %d: %s", path, rec.Code, rec.Body)
		}
		if rec.Body.Len() > agent.MaxOwnersBytes {
			t.Fatalf("%s: a reply of %d bytes", path, rec.Body.Len())
		}
		if rec.Code != http.StatusOK {
			var er agent.ErrorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Error == "" {
				t.Fatalf("%s: body %q", path, rec.Body)
			}
		}
		return rec
	}
	list := func(t *testing.T, body []byte) []agent.ZoneRef {
		t.Helper()
		rec := post(t, agent.PathOwnersList, body, 200, 400, 413)
		if rec.Code != http.StatusOK {
			return nil
		}
		var out agent.StoredOwners
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("list: %v: %s", err, rec.Body)
		}
		if !slices.IsSortedFunc(out.Zones, agent.CompareZoneRefs) {
			t.Fatalf("list not sorted: %+v", out.Zones)
		}
		return out.Zones
	}
	type question struct{ signer, name, typ string }
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := post(t, agent.PathOwners, body, 200, 400, 413, 422)
		post(t, agent.PathOwnersGet, body, 200, 400, 404, 413, 422)
		list(t, body)
		if rec.Code != http.StatusOK {
			return
		}
		// What the push should have stored: decode is stricter than
		// Unmarshal (unknown fields, trailing data), never laxer.
		var sent agent.OwnersRequest
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatalf("the agent took %q: %v", body, err)
		}
		want, err := validate.Owners(sent)
		if err != nil {
			t.Fatalf("the agent took %q, which validate.Owners refuses: %v", body, err)
		}
		ref := agent.ZoneRef{View: want.View, Zone: want.Zone}

		got := post(t, agent.PathOwnersGet, seed(ref), 200)
		var stored agent.OwnersRequest
		if err := json.Unmarshal(got.Body.Bytes(), &stored); err != nil {
			t.Fatalf("get: %v", err)
		}
		if !reflect.DeepEqual(stored, want) {
			t.Fatalf("pushed %q, read back %+v, want %+v", body, stored, want)
		}
		if !slices.Contains(list(t, []byte(`{}`)), ref) {
			t.Fatalf("%+v stored but not listed", ref)
		}

		// The rule, against its model: the stored requests are the push
		// and the background, unless the push replaced it.
		bg := agent.ZoneRef{Zone: background.Zone}
		state := []agent.OwnersRequest{want}
		if ref != bg {
			state = append(state, background)
		}
		var names []string
		for _, s := range append(want.Sets[:min(len(want.Sets), 8):min(len(want.Sets), 8)], background.Sets...) {
			names = append(names, s.Name, "x."+s.Name)
		}
		names = append(names, want.Zone, "x."+want.Zone, "x.y."+want.Zone)
		if _, parent, ok := strings.Cut(want.Zone, "."); ok {
			names = append(names, parent, "z."+parent)
		}
		signers := append([]string{"updates", "other", "UPDATES."}, want.UpdateKeys[:min(len(want.UpdateKeys), 4)]...)
		var questions []question
		for _, name := range names {
			for _, signer := range signers {
				typ := "A"
				for _, s := range append(want.Sets, background.Sets...) {
					if s.Name == name {
						typ = s.Type
						break
					}
				}
				questions = append(questions, question{signer, name, typ}, question{signer, name, "TXT"})
			}
		}
		check := func(stored []agent.OwnersRequest, when string) {
			t.Helper()
			for _, q := range questions {
				v, zone := o.judge(q.signer, q.name, q.typ)
				mv, mzone := modelJudge(stored, q.signer, q.name, q.typ)
				if v != mv || zone != mzone {
					t.Fatalf("%s: judge%+v = %v %q, the rule says %v %q (stored %+v)", when, q, v, zone, mv, mzone, stored)
				}
			}
		}
		check(state, "pushed "+string(body))

		if err := o.forget(ref); err != nil {
			t.Fatal(err)
		}
		if post(t, agent.PathOwnersGet, seed(ref), 404); slices.Contains(list(t, []byte(`{}`)), ref) {
			t.Fatalf("%+v forgotten but listed", ref)
		}
		check(state[1:], "forgotten "+string(body))
		if ref == bg {
			if err := o.store(background); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// modelJudge is the rule judge implements, spelled out over the stored
// requests without judge's index: the signer's views are those of the
// requests that list it; in each, the deepest zone that holds the name
// decides (grant, owned, or foreignZone when it does not list the
// signer); any refusal wins over a grant, foreignZone over owned, then
// the first zone in byte order; no deciding zone is unknownZone.
func modelJudge(stored []agent.OwnersRequest, signer, name, typ string) (verdict, string) {
	signer = strings.ToLower(strings.TrimSuffix(signer, "."))
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	typ = strings.ToUpper(typ)
	if signer == "" {
		return unknownZone, ""
	}
	views := map[string]bool{}
	for _, r := range stored {
		if slices.Contains(r.UpdateKeys, signer) {
			views[r.View] = true
		}
	}
	type decision struct {
		v    verdict
		zone string
	}
	var all []decision
	for view := range views {
		var deciding *agent.OwnersRequest
		for i, r := range stored {
			holds := name == r.Zone || strings.HasSuffix(name, "."+r.Zone)
			if r.View == view && holds && (deciding == nil || len(r.Zone) > len(deciding.Zone)) {
				deciding = &stored[i]
			}
		}
		if deciding == nil {
			continue
		}
		d := decision{grant, deciding.Zone}
		switch {
		case !slices.Contains(deciding.UpdateKeys, signer):
			d.v = foreignZone
		case slices.ContainsFunc(deciding.Sets, func(s agent.OwnedSet) bool { return s.Name == name && s.Type == typ }):
			d.v = owned
		}
		all = append(all, d)
	}
	if len(all) == 0 {
		return unknownZone, ""
	}
	rank := map[verdict]int{foreignZone: 0, owned: 1, grant: 2}
	best := slices.MinFunc(all, func(a, b decision) int {
		if c := rank[a.v] - rank[b.v]; c != 0 {
			return c
		}
		return strings.Compare(a.zone, b.zone)
	})
	return best.v, best.zone
}

// FuzzSeedRequest feeds arbitrary query values and bodies to the seed
// handler. Nothing panics; an answer is 200 only for a body whose digest
// the query names and that validate.Seed accepts, and then the file is
// the zone's primary file inside the data directory; every refusal is
// JSON with a message and leaves no file behind.
//
//	go test -fuzz FuzzSeedRequest -fuzztime 30s ./agent/server/
func FuzzSeedRequest(f *testing.F) {
	good := "$ORIGIN a.test.\n@ 300 SOA ns hostmaster 1 300 60 1209600 60\n@ 300 NS ns\nns 300 A 198.18.0.1\n"
	f.Add("", "a.test", validate.SeedDigest([]byte(good)), []byte(good))
	f.Add("v", "../a.test", validate.SeedDigest([]byte(good)), []byte(good))
	f.Add("", "a.test", strings.Repeat("0", 64), []byte("$INCLUDE /etc/passwd\n"))
	dir := f.TempDir()
	st, err := openStore(dir)
	if err != nil {
		f.Fatal(err)
	}
	a := &Agent{
		store:   st,
		cfg:     Config{Paths: render.Paths{ConfigDir: "/c", KeysDir: "/k", DataDir: dir}, ControlAddr: "127.0.0.1:1"},
		log:     discardLogger(),
		api:     &session{addr: "127.0.0.1:1", keyFile: "/nonexistent"},
		metrics: newAgentMetrics(nopRegisterer{}, func() int { return 0 }),
		ready:   newReadiness(),
	}
	h := a.apiHandler()
	f.Fuzz(func(t *testing.T, view, zone, digest string, body []byte) {
		q := url.Values{agent.SeedQueryView: {view}, agent.SeedQueryZone: {zone}, agent.SeedQuerySHA256: {digest}}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, agent.PathSeed+"?"+q.Encode(), bytes.NewReader(body)))
		switch rec.Code {
		case 200:
			if digest != validate.SeedDigest(body) {
				t.Fatalf("accepted a body whose digest is not %q", digest)
			}
			ref, err := checkRef(agent.ZoneRef{View: view, Zone: zone})
			if err != nil {
				t.Fatalf("accepted names %q %q: %v", view, zone, err)
			}
			p := a.cfg.Paths.PrimaryZoneFile(ref.View, ref.Zone)
			if !strings.HasPrefix(p, dir+"/") {
				t.Fatalf("wrote %q outside the data dir", p)
			}
			_ = os.Remove(p)
			_ = os.Remove(seedMarker(p))
		case 400, 413, 422:
			var er agent.ErrorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &er); err != nil || er.Error == "" {
				t.Fatalf("status %d: body %q", rec.Code, rec.Body)
			}
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		// Nothing staged is left behind.
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), ".stage") {
				t.Fatalf("staged file %s left behind", p)
			}
			return nil
		})
	})
}
