package agent_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// The whole life of a primary zone through the agent, checked through
// named's DNS answers and files, not only the agent's replies.
func TestZoneLifecycle(t *testing.T) {
	e := startEnv(t, bindtest.Options{})
	ctx := ctxT(t)
	req := e.primary("", "life.test", "")
	file := e.paths.PrimaryZoneFile("", "life.test")

	res, err := e.client.EnsureZone(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != agent.ActionAdded || !res.SeedWritten {
		t.Fatalf("first ensure: %+v", res)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != req.Seed {
		t.Fatalf("seed file: %v %q", err, b)
	}
	if serial, rcode := soa(t, e.named.DNSAddr, "life.test"); serial != 1 || rcode != dns.RcodeSuccess {
		t.Fatalf("served serial %d rcode %d", serial, rcode)
	}

	// Same request again: nothing changes, the file is not rewritten.
	before, _ := os.Stat(file)
	res, err = e.client.EnsureZone(ctx, req)
	if err != nil || res.Action != agent.ActionUnchanged || res.SeedWritten {
		t.Fatalf("repeat ensure: %+v %v", res, err)
	}
	after, _ := os.Stat(file)
	if !before.ModTime().Equal(after.ModTime()) {
		t.Fatal("repeat ensure touched the zone file")
	}

	// Another clause: modzone, then the new clause is what named shows.
	changed := e.primary("", "life.test", `allow-transfer { key "`+e.named.ControlKey.Name+`"; }; allow-query { any; }; `)
	res, err = e.client.EnsureZone(ctx, changed)
	if err != nil || res.Action != agent.ActionModified {
		t.Fatalf("changed clause: %+v %v", res, err)
	}
	out, err := e.named.Rndc(ctx, "showzone", "life.test")
	if err != nil || !strings.Contains(out, "allow-transfer") {
		t.Fatalf("showzone after modzone: %v %s", err, out)
	}
	// named prints it in its own order; the same request is unchanged.
	if res, err = e.client.EnsureZone(ctx, changed); err != nil || res.Action != agent.ActionUnchanged {
		t.Fatalf("repeat of the changed clause: %+v %v", res, err)
	}

	st, err := e.client.ZoneStatus(ctx, agent.ZoneRef{Zone: "life.test"})
	if err != nil || !st.Exists || !st.Loaded || st.Serial != 1 || st.Type != "primary" || !st.Expected {
		t.Fatalf("status: %+v %v", st, err)
	}
	if err := e.client.Sync(ctx); err != nil {
		t.Fatalf("sync: %v", err)
	}

	del, err := e.client.DeleteZone(ctx, agent.ZoneRef{Zone: "life.test"})
	if err != nil || del.Action != agent.ActionDeleted {
		t.Fatalf("delete: %+v %v", del, err)
	}
	if _, rcode := soa(t, e.named.DNSAddr, "life.test"); rcode != dns.RcodeRefused {
		t.Fatalf("after delete: rcode %s", dns.RcodeToString[rcode])
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("delzone -clean left the seed the agent wrote: %v", err)
	}
	if del, err = e.client.DeleteZone(ctx, agent.ZoneRef{Zone: "life.test"}); err != nil || del.Action != agent.ActionAbsent {
		t.Fatalf("second delete: %+v %v", del, err)
	}
	if st, err = e.client.ZoneStatus(ctx, agent.ZoneRef{Zone: "life.test"}); err != nil || st.Exists || st.Expected {
		t.Fatalf("status after delete: %+v %v", st, err)
	}
}

// A zone file that already exists (dynamic updates live there) is never
// overwritten by a seed, and delete leaves a file the agent did not write.
func TestSeedNeverOverwrites(t *testing.T) {
	e := startEnv(t, bindtest.Options{})
	ctx := ctxT(t)
	req := e.primary("", "kept.test", "")
	file := e.paths.PrimaryZoneFile("", "kept.test")
	if err := os.MkdirAll(strings.TrimSuffix(file, "/kept.test.db"), 0o755); err != nil {
		t.Fatal(err)
	}
	existing := bindtest.SeedZone("kept.test", 42)
	if err := os.WriteFile(file, []byte(existing), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.client.EnsureZone(ctx, req)
	if err != nil || res.Action != agent.ActionAdded || res.SeedWritten {
		t.Fatalf("ensure: %+v %v", res, err)
	}
	if serial, _ := soa(t, e.named.DNSAddr, "kept.test"); serial != 42 {
		t.Fatalf("served serial %d, want the existing file's 42", serial)
	}
	if b, _ := os.ReadFile(file); string(b) != existing {
		t.Fatal("existing zone file was overwritten")
	}
	if _, err := e.client.DeleteZone(ctx, agent.ZoneRef{Zone: "kept.test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("delete removed a file the agent did not write: %v", err)
	}
}

// Zones in a view: the view goes to rndc and into the file path.
func TestView(t *testing.T) {
	e := startEnv(t, bindtest.Options{Config: `view "internal" { match-clients { any; }; };` + "\n"})
	ctx := ctxT(t)
	req := e.primary("internal", "inside.test", "")
	if !strings.Contains(req.Clause, "/internal/inside.test.db") {
		t.Fatalf("clause %s", req.Clause)
	}
	res, err := e.client.EnsureZone(ctx, req)
	if err != nil || res.Action != agent.ActionAdded {
		t.Fatalf("ensure in view: %+v %v", res, err)
	}
	if serial, _ := soa(t, e.named.DNSAddr, "inside.test"); serial != 1 {
		t.Fatalf("served serial %d", serial)
	}
	if res, err = e.client.EnsureZone(ctx, req); err != nil || res.Action != agent.ActionUnchanged {
		t.Fatalf("repeat in view: %+v %v", res, err)
	}
	st, err := e.client.ZoneStatus(ctx, agent.ZoneRef{View: "internal", Zone: "inside.test"})
	if err != nil || !st.Loaded {
		t.Fatalf("status in view: %+v %v", st, err)
	}
	if _, err := e.client.DeleteZone(ctx, agent.ZoneRef{View: "internal", Zone: "inside.test"}); err != nil {
		t.Fatal(err)
	}
}
