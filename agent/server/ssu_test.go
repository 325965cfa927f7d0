package server

import (
	"bytes"
	"encoding/binary"
	"net"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/render"
)

// ssuBytes encodes a request the way named does (lib/dns/ssu_external.c).
func ssuBytes(version uint32, fields [5]string, token []byte) []byte {
	var body bytes.Buffer
	for _, f := range fields {
		body.WriteString(f)
		body.WriteByte(0)
	}
	_ = binary.Write(&body, binary.BigEndian, uint32(len(token)))
	body.Write(token)
	var out bytes.Buffer
	_ = binary.Write(&out, binary.BigEndian, version)
	_ = binary.Write(&out, binary.BigEndian, uint32(8+body.Len()))
	out.Write(body.Bytes())
	return out.Bytes()
}

func TestReadSSURequest(t *testing.T) {
	g := NewWithT(t)
	req, err := readSSURequest(bytes.NewReader(ssuBytes(1, [5]string{"updates", "www.example.com", "198.18.0.9", "A", "updates/hmac-sha256"}, nil)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(req).To(Equal(ssuRequest{signer: "updates", name: "www.example.com", addr: "198.18.0.9", typ: "A", key: "updates/hmac-sha256"}))

	for name, b := range map[string][]byte{
		"version 2":        ssuBytes(2, [5]string{"k", "n", "", "A", ""}, nil),
		"short header":     {0, 0, 0, 1, 0},
		"token overruns":   append(ssuBytes(1, [5]string{"k", "n", "", "A", ""}, nil)[:8+2+2+1+2+1], 0, 0, 0, 9),
		"unterminated":     {0, 0, 0, 1, 0, 0, 0, 17, 'k', 'k', 'k', 'k', 'k', 'k', 'k', 'k', 'k'},
		"length too large": {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff},
		"length too small": {0, 0, 0, 1, 0, 0, 0, 8},
		"body shorter":     {0, 0, 0, 1, 0, 0, 0, 40, 'k', 0},
	} {
		_, err := readSSURequest(bytes.NewReader(b))
		g.Expect(err).To(HaveOccurred(), name)
	}
	// The length says where the request ends: the reader stops there.
	r := bytes.NewReader(append(ssuBytes(1, [5]string{"k", "n", "", "A", ""}, nil), 'x'))
	_, err = readSSURequest(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Len()).To(Equal(1))
}

// The signer's view decides where to look, and there the deepest zone
// that holds the name decides: its own keys are granted (but for the sets
// the operator owns, by name and type, case-insensitively), any other key
// is refused, so a parent zone's key does not write into a child zone,
// with keys or without; a zone in another view does not shield its
// parent's names. A signer no zone names, or none at all, is refused.
func TestOwnersJudge(t *testing.T) {
	g := NewWithT(t)
	o, err := openOwners(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.store(agent.OwnersRequest{Zone: "example.com", UpdateKeys: []string{"updates"}, Sets: []agent.OwnedSet{{Name: "www.example.com", Type: "A"}, {Name: "example.com", Type: "SOA"}}})).To(Succeed())
	g.Expect(o.store(agent.OwnersRequest{Zone: "team.example.com", UpdateKeys: []string{"team"}, Sets: []agent.OwnedSet{{Name: "api.team.example.com", Type: "CNAME"}}})).To(Succeed())
	g.Expect(o.store(agent.OwnersRequest{Zone: "shared.example.com", UpdateKeys: []string{"shared", "updates"}, Sets: []agent.OwnedSet{{Name: "db.shared.example.com", Type: "A"}}})).To(Succeed())
	g.Expect(o.store(agent.OwnersRequest{Zone: "keyless.example.com", Sets: []agent.OwnedSet{{Name: "x.keyless.example.com", Type: "A"}}})).To(Succeed())
	g.Expect(o.store(agent.OwnersRequest{View: "inside", Zone: "example.com", UpdateKeys: []string{"inside-updates"}, Sets: []agent.OwnedSet{{Name: "db.example.com", Type: "A"}}})).To(Succeed())

	for _, c := range []struct {
		signer, name, typ string
		want              verdict
		zone              string
	}{
		{"updates", "www.example.com", "A", owned, "example.com"},
		{"UPDATES.", "WWW.Example.com.", "a", owned, "example.com"},
		{"updates", "www.example.com", "AAAA", grant, "example.com"},
		{"updates", "example.com", "SOA", owned, "example.com"},
		{"updates", "new.deep.example.com", "TXT", grant, "example.com"},
		{"updates", "db.example.com", "A", grant, "example.com"}, // owned in the other view only
		{"inside-updates", "db.example.com", "A", owned, "example.com"},

		// A child zone with keys of its own: the parent's key is refused
		// on every name of it, owned set or not, existing or new.
		{"updates", "api.team.example.com", "CNAME", foreignZone, "team.example.com"},
		{"updates", "api.team.example.com", "TXT", foreignZone, "team.example.com"},
		{"updates", "evil.team.example.com", "A", foreignZone, "team.example.com"},
		{"updates", "team.example.com", "NS", foreignZone, "team.example.com"},
		{"updates", "a.b.team.example.com", "A", foreignZone, "team.example.com"},
		{"team", "api.team.example.com", "CNAME", owned, "team.example.com"},
		{"team", "new.team.example.com", "A", grant, "team.example.com"},
		{"team", "www.example.com", "A", foreignZone, "example.com"}, // and the child's key stays out of the parent
		{"team", "example.org", "A", unknownZone, ""},

		// A child zone naming the parent's key too: granted by the child.
		{"updates", "new.shared.example.com", "A", grant, "shared.example.com"},
		{"updates", "db.shared.example.com", "A", owned, "shared.example.com"},
		{"shared", "new.shared.example.com", "A", grant, "shared.example.com"},
		{"shared", "www.example.com", "AAAA", foreignZone, "example.com"},

		// A child zone stored without keys: nobody's UPDATEs, the parent's
		// key's neither.
		{"updates", "x.keyless.example.com", "A", foreignZone, "keyless.example.com"},
		{"updates", "new.keyless.example.com", "A", foreignZone, "keyless.example.com"},

		// The child zones are in the default view: in view inside, the
		// parent holds their names.
		{"inside-updates", "api.team.example.com", "CNAME", grant, "example.com"},
		{"inside-updates", "x.keyless.example.com", "A", grant, "example.com"},

		{"other", "www.example.com", "AAAA", unknownZone, ""},
		{"", "www.example.com", "AAAA", unknownZone, ""},
		{"updates", "example.org", "A", unknownZone, ""},
		{"updates", "com", "A", unknownZone, ""},
	} {
		v, zone := o.judge(c.signer, c.name, c.typ)
		g.Expect(v).To(Equal(c.want), "%+v", c)
		g.Expect(zone).To(Equal(c.zone), "%+v", c)
	}

	// A zone's keys replaced: the old one is no longer its; gone, the
	// parent holds its names again.
	g.Expect(o.store(agent.OwnersRequest{Zone: "team.example.com", UpdateKeys: []string{"team2"}, Sets: []agent.OwnedSet{{Name: "api.team.example.com", Type: "CNAME"}}})).To(Succeed())
	v, zone := o.judge("team", "new.team.example.com", "A")
	g.Expect([]any{v, zone}).To(Equal([]any{unknownZone, ""}))
	v, zone = o.judge("team2", "new.team.example.com", "A")
	g.Expect([]any{v, zone}).To(Equal([]any{grant, "team.example.com"}))
	g.Expect(o.keyViews).NotTo(HaveKey("team"))
	g.Expect(o.forget(agent.ZoneRef{Zone: "team.example.com"})).To(Succeed())
	v, zone = o.judge("updates", "evil.team.example.com", "A")
	g.Expect([]any{v, zone}).To(Equal([]any{grant, "example.com"}))
	g.Expect(o.keyViews).NotTo(HaveKey("team2"))
	g.Expect(o.store(agent.OwnersRequest{Zone: "team.example.com", UpdateKeys: []string{"team"}, Sets: []agent.OwnedSet{{Name: "api.team.example.com", Type: "CNAME"}}})).To(Succeed())

	// Kept across restarts; a deleted zone's owners go.
	dir := filepath.Dir(filepath.Dir(o.dir))
	again, err := openOwners(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.keyViews).To(Equal(o.keyViews))
	v, _ = again.judge("team", "api.team.example.com", "CNAME")
	g.Expect(v).To(Equal(owned))
	g.Expect(again.forget(agent.ZoneRef{Zone: "team.example.com"})).To(Succeed())
	v, _ = again.judge("team", "api.team.example.com", "CNAME")
	g.Expect(v).To(Equal(unknownZone))
	again, err = openOwners(dir)
	g.Expect(err).NotTo(HaveOccurred())
	v, _ = again.judge("team", "api.team.example.com", "CNAME")
	g.Expect(v).To(Equal(unknownZone))
	v, _ = again.judge("inside-updates", "db.example.com", "A")
	g.Expect(v).To(Equal(owned))
	v, _ = again.judge("updates", "x.keyless.example.com", "A")
	g.Expect(v).To(Equal(foreignZone), "a keyless entry decides after a restart too")
}

// A key listed in two views at once (a moment while it moves; the
// webhook refuses it otherwise): every view is asked, any refusal wins,
// whatever the order of the entries.
func TestOwnersJudgeKeyInTwoViews(t *testing.T) {
	g := NewWithT(t)
	o, err := openOwners(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.store(agent.OwnersRequest{View: "a", Zone: "m.test", UpdateKeys: []string{"mover"}, Sets: []agent.OwnedSet{{Name: "www.m.test", Type: "A"}}})).To(Succeed())
	g.Expect(o.store(agent.OwnersRequest{View: "b", Zone: "m.test", UpdateKeys: []string{"mover"}})).To(Succeed())
	g.Expect(o.store(agent.OwnersRequest{View: "b", Zone: "sub.m.test", UpdateKeys: []string{"other"}})).To(Succeed())
	g.Expect(o.keyViews["mover"]).To(Equal(map[string]int{"a": 1, "b": 1}))
	for range 20 { // map order varies
		for _, c := range []struct {
			name string
			want verdict
			zone string
		}{
			{"new.m.test", grant, "m.test"},
			{"www.m.test", owned, "m.test"},             // owned in view a
			{"x.sub.m.test", foreignZone, "sub.m.test"}, // a child zone in view b
			{"x.other.test", unknownZone, ""},
		} {
			v, zone := o.judge("mover", c.name, "A")
			g.Expect([]any{v, zone}).To(Equal([]any{c.want, c.zone}), c.name)
		}
	}
	g.Expect(o.forget(agent.ZoneRef{View: "b", Zone: "m.test"})).To(Succeed())
	g.Expect(o.keyViews["mover"]).To(Equal(map[string]int{"a": 1}))
	v, zone := o.judge("mover", "x.sub.m.test", "A")
	g.Expect([]any{v, zone}).To(Equal([]any{grant, "m.test"}), "view b no longer the key's: its child zone does not decide")
}

// judge runs per record of every UPDATE a zone's update key signs: no
// allocation for the names named sends (lowercase, no trailing dot).
func TestOwnersJudgeAllocatesNothing(t *testing.T) {
	o := judgeFixture(t)
	for _, q := range [][3]string{
		{"updates", "www.example.com", "A"},
		{"updates", "new.deep.deeper.example.com", "TXT"},
		{"updates", "evil.team.example.com", "A"},
		{"team", "api.team.example.com", "CNAME"},
		{"other", "www.example.com", "A"},
	} {
		if n := testing.AllocsPerRun(100, func() { o.judge(q[0], q[1], q[2]) }); n != 0 {
			t.Errorf("judge%q: %v allocations", q, n)
		}
	}
}

func judgeFixture(tb testing.TB) *owners {
	tb.Helper()
	o, err := openOwners(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	for _, req := range []agent.OwnersRequest{
		{Zone: "example.com", UpdateKeys: []string{"updates"}, Sets: []agent.OwnedSet{{Name: "www.example.com", Type: "A"}}},
		{Zone: "team.example.com", UpdateKeys: []string{"team"}, Sets: []agent.OwnedSet{{Name: "api.team.example.com", Type: "CNAME"}}},
		{View: "inside", Zone: "example.com", UpdateKeys: []string{"inside"}},
	} {
		if err := o.store(req); err != nil {
			tb.Fatal(err)
		}
	}
	return o
}

// BenchmarkJudge: one record's verdict, a name of five labels under a
// child zone.
//
//	go test -run - -bench Judge ./agent/server/
func BenchmarkJudge(b *testing.B) {
	o := judgeFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		o.judge("updates", "a.b.evil.team.example.com", "A")
	}
}

// The socket answers 1 for a granted record and 0 otherwise, and drops a
// connection whose request it cannot read.
func TestOwnersSocket(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	o, err := openOwners(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.store(agent.OwnersRequest{Zone: "example.com", UpdateKeys: []string{"updates"}, Sets: []agent.OwnedSet{{Name: "www.example.com", Type: "A"}}})).To(Succeed())
	a := &Agent{cfg: Config{Paths: render.Paths{DataDir: dir}}, owners: o, log: discardLogger(), metrics: newAgentMetrics(nopRegisterer{}, func() int { return 0 })}
	ln, err := a.listenOwners(t.Context())
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan struct{})
	go func() { a.serveOwners(ln); close(done) }()
	defer func() { ln.Close(); <-done }()

	ask := func(b []byte) ([]byte, error) {
		c, err := net.Dial("unix", a.cfg.Paths.OwnersSocket())
		if err != nil {
			return nil, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(b); err != nil {
			return nil, err
		}
		var out [4]byte
		n, err := c.Read(out[:])
		return out[:n], err
	}
	g.Expect(ask(ssuBytes(1, [5]string{"updates", "new.example.com", "", "A", "updates/hmac-sha256"}, nil))).To(Equal([]byte{0, 0, 0, 1}))
	g.Expect(ask(ssuBytes(1, [5]string{"updates", "www.example.com", "", "A", "updates/hmac-sha256"}, nil))).To(Equal([]byte{0, 0, 0, 0}))
	g.Expect(ask(ssuBytes(1, [5]string{"", "new.example.com", "", "A", ""}, nil))).To(Equal([]byte{0, 0, 0, 0}))
	_, err = ask(ssuBytes(7, [5]string{"updates", "new.example.com", "", "A", ""}, nil))
	g.Expect(err).To(HaveOccurred()) // closed without an answer: named refuses
}

// FuzzSSURequest feeds arbitrary bytes to the reader of named's requests:
// it never panics, never reads past the length the request gives, and what
// it accepts re-encodes to the same bytes.
//
//	go test -fuzz FuzzSSURequest -fuzztime 30s ./agent/server/
func FuzzSSURequest(f *testing.F) {
	f.Add(ssuBytes(1, [5]string{"updates", "www.example.com", "198.18.0.9", "A", "updates/hmac-sha256"}, nil))
	f.Add(ssuBytes(1, [5]string{"", "", "", "", ""}, []byte("token")))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		req, err := readSSURequest(r)
		if err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(b[4:8]))
		if consumed := len(b) - r.Len(); consumed != n {
			t.Fatalf("read %d bytes of a %d-byte request", consumed, n)
		}
		token := b[n-(n-8-len(req.signer)-len(req.name)-len(req.addr)-len(req.typ)-len(req.key)-5-4) : n]
		if got := ssuBytes(1, [5]string{req.signer, req.name, req.addr, req.typ, req.key}, token); !bytes.Equal(got, b[:n]) {
			t.Fatalf("re-encoded %q, read %q", got, b[:n])
		}
	})
}
