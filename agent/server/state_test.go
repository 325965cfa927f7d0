package server

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"git.unkin.net/unkin/bind-operator/agent"
)

func set(refs ...agent.ZoneRef) func(m map[agent.ZoneRef]zoneState) []agent.ZoneRef {
	return func(m map[agent.ZoneRef]zoneState) []agent.ZoneRef {
		for _, r := range refs {
			m[r] = zoneState{View: r.View, Zone: r.Zone, Type: "primary"}
		}
		return refs
	}
}

// The list survives a reopen through the journal, through compaction, and
// through a write torn by a crash.
func TestStorePersistence(t *testing.T) {
	dir := t.TempDir()
	s, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b := agent.ZoneRef{Zone: "a.test"}, agent.ZoneRef{View: "v", Zone: "b.test"}
	if err := s.update(set(a, b)); err != nil {
		t.Fatal(err)
	}
	if err := s.update(func(m map[agent.ZoneRef]zoneState) []agent.ZoneRef { delete(m, a); return []agent.ZoneRef{a} }); err != nil {
		t.Fatal(err)
	}
	s.close()
	// A torn last line (crash mid-append) is ignored.
	f, _ := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"set":{"zone":"torn`)
	f.Close()

	s, err = openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.get(b); !ok || s.len() != 1 {
		t.Fatalf("after reopen: %v", s.snapshot())
	}
	// Many changes: the journal is folded into the snapshot.
	for i := 0; i < 3000; i++ {
		if err := s.update(set(agent.ZoneRef{Zone: fmt.Sprintf("z%d.test", i)})); err != nil {
			t.Fatal(err)
		}
	}
	if s.journalLines > s.len()+1024 {
		t.Fatalf("journal not compacted: %d lines", s.journalLines)
	}
	s.close()
	s, err = openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.len() != 3001 {
		t.Fatalf("after compaction and reopen: %d zones", s.len())
	}
	s.close()
	// A corrupt snapshot is an error that says what to do, not a silent
	// empty list.
	os.WriteFile(filepath.Join(dir, StateFile), []byte("{"), 0o644)
	if _, err := openStore(dir); err == nil {
		t.Fatal("corrupt state accepted")
	}
}

func TestParseControlKey(t *testing.T) {
	k, err := ParseControlKey(`# comment
options { x; };
// another
key "rndc-key" { /* inline */ algorithm hmac-sha256; secret "c2VjcmV0c2VjcmV0"; };`)
	if err != nil || k.Name != "rndc-key" || k.Algorithm.String() != "hmac-sha256" {
		t.Fatalf("%v %v", k, err)
	}
	for _, bad := range []string{
		``, `key "k" { algorithm hmac-sha256; };`, `key "k" { secret "c2VjcmV0"; };`,
		`key "k" { algorithm hmac-sha256; secret "not base64!"; };`, `key "k" { algorithm rot13; secret "c2VjcmV0"; };`,
		`key "k" { algorithm hmac-sha256; secret "c2VjcmV0"`, `/* unterminated`, `key "k" { secret "c2Vj`,
	} {
		_, err := ParseControlKey(bad)
		if err == nil {
			t.Errorf("accepted %q", bad)
			continue
		}
		if s := err.Error(); len(bad) > 0 && contains(s, "c2VjcmV0") {
			t.Errorf("error leaks the secret: %s", s)
		}
	}
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}

func TestParseZoneStatus(t *testing.T) {
	var st agent.ZoneStatus
	parseZoneStatus("name: a.test\ntype: primary\nfiles: /x\nserial: 4294967295\nlast loaded: Wed, 02 Dec 2026 11:32:08 GMT\n", &st)
	if st.Type != "primary" || st.Serial != 4294967295 || !st.Loaded {
		t.Fatalf("%+v", st)
	}
	st = agent.ZoneStatus{}
	parseZoneStatus("serial: -1\nserial: 99999999999\ntype: "+string(make([]byte, 100))+"\n::::\nlast loaded:\n", &st)
	if st.Serial != 0 || st.Type != "" || st.Loaded {
		t.Fatalf("hostile zonestatus: %+v", st)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

type nopRegisterer struct{}

func (nopRegisterer) Register(prometheus.Collector) error  { return nil }
func (nopRegisterer) MustRegister(...prometheus.Collector) {}
func (nopRegisterer) Unregister(prometheus.Collector) bool { return true }
