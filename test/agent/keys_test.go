package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// keysOptions: named with a KSK/ZSK policy (two keys, so a restore that
// kept only one would show) and its key-directory where the agent expects
// it, render's DNSSECKeysDir under the data directory.
func keysOptions() bindtest.Options {
	return bindtest.Options{
		Options: `key-directory "keys";` + "\n",
		Files:   map[string]string{"keys/.keep": ""},
		Config: `dnssec-policy "kept" {
	keys {
		ksk lifetime unlimited algorithm ecdsap256sha256;
		zsk lifetime unlimited algorithm ecdsap256sha256;
	};
};
`,
	}
}

const keptClause = `dnssec-policy "kept"; inline-signing yes; `

// TestSignedZoneKeysSurviveANewVolume (issue 46 item 6, at the agent): the
// key files read from one named are restored onto a second named's empty
// volume before the zone is added there, and the second signs with the
// same keys: the same DNSKEY set, so the DS a parent holds stays valid.
// A restore never joins keys named has: not while it serves the zone,
// not once the key-directory holds a key of it.
func TestSignedZoneKeysSurviveANewVolume(t *testing.T) {
	ctx := ctxT(t)
	g := NewWithT(t)
	const zone = "kept.test"
	old := startEnv(t, keysOptions())
	_, err := old.client.EnsureZone(ctx, old.primary("", zone, keptClause))
	g.Expect(err).NotTo(HaveOccurred())
	before := waitDNSKEYs(ctx, t, old.named.DNSAddr, zone, 2)

	var keys agent.ZoneKeys
	g.Eventually(func(g Gomega) {
		keys, err = old.client.ZoneKeys(ctx, zone, validate.Replies)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(kinds(keys)).To(Equal([]string{"key", "key", "private", "private", "state", "state"}))
	}).WithTimeout(15 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	res, err := old.client.RestoreZoneKeys(ctx, keys)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(agent.KeysRestoreResult{Reason: "named serves the zone already, with the keys it has"}))

	fresh := startEnv(t, keysOptions())
	res, err = fresh.client.RestoreZoneKeys(ctx, keys)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Restored).To(BeTrue(), "restore onto an empty volume: %+v", res)
	res, err = fresh.client.RestoreZoneKeys(ctx, keys)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Restored).To(BeFalse())
	g.Expect(res.Reason).To(ContainSubstring("holds 6 key file(s) of the zone already"))

	_, err = fresh.client.EnsureZone(ctx, fresh.primary("", zone, keptClause))
	g.Expect(err).NotTo(HaveOccurred())
	after := waitDNSKEYs(ctx, t, fresh.named.DNSAddr, zone, 2)
	g.Expect(after).To(Equal(before), "the DNSKEY set after the restore")
	again, err := fresh.client.ZoneKeys(ctx, zone, validate.Replies)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(publicAndPrivate(again)).To(Equal(publicAndPrivate(keys)), "named made no key of its own")
	t.Logf("a second named signed %s with the restored keys: DNSKEY tags %v", zone, before)
}

// TestKeyRestoreRefusesWhatIsNotTheZonesKey: files a tenant could put in
// the Secret are checked before anything is written, and the refusal
// names the file, never its content.
func TestKeyRestoreRefusesWhatIsNotTheZonesKey(t *testing.T) {
	ctx := ctxT(t)
	src := startEnv(t, keysOptions())
	_, err := src.client.EnsureZone(ctx, src.primary("", "other.test", keptClause))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	waitDNSKEYs(ctx, t, src.named.DNSAddr, "other.test", 2)
	var other agent.ZoneKeys
	NewWithT(t).Eventually(func() (int, error) {
		other, err = src.client.ZoneKeys(ctx, "other.test", validate.Replies)
		return len(other.Files), err
	}).WithTimeout(15 * time.Second).Should(Equal(6))
	private := ""
	for _, f := range other.Files {
		if f.Kind == agent.KeyFilePrivate {
			private = f.Data
		}
	}
	dst := startEnv(t, keysOptions())
	for _, c := range []struct {
		desc  string
		keys  agent.ZoneKeys
		field string
	}{
		{"another zone's keys", agent.ZoneKeys{Zone: "kept.test", Files: other.Files}, "files[0]"},
		{"a private key without its public half", agent.ZoneKeys{Zone: "other.test", Files: only(other.Files, agent.KeyFilePrivate)}, "files"},
		{"an unknown kind", agent.ZoneKeys{Zone: "other.test", Files: []agent.KeyFile{{Algorithm: 13, Tag: 1, Kind: "../../named.conf", Data: "x"}}}, "files[0]"},
		{"binary content", agent.ZoneKeys{Zone: "other.test", Files: []agent.KeyFile{{Algorithm: 13, Tag: 1, Kind: "state", Data: "\x00"}}}, "files[0]"},
	} {
		_, err := dst.client.RestoreZoneKeys(ctx, c.keys)
		var ae *agent.Error
		if !errors.As(err, &ae) || ae.Status != 422 || ae.Field != c.field {
			t.Errorf("%s: got %v, want a 422 on %s", c.desc, err, c.field)
			continue
		}
		if strings.Contains(ae.Message, strings.TrimSpace(private)[len(private)/2:]) {
			t.Errorf("%s: the refusal quotes the private key", c.desc)
		}
	}
	got, err := dst.client.ZoneKeys(ctx, "other.test", validate.Replies)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(got.Files).To(BeEmpty(), "nothing was written")
}

// waitDNSKEYs waits until named serves n DNSKEYs for zone and returns
// their tags, sorted.
func waitDNSKEYs(ctx context.Context, t *testing.T, addr, zone string, n int) []uint16 {
	t.Helper()
	var tags []uint16
	NewWithT(t).Eventually(func() int {
		tags = nil
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(zone), dns.TypeDNSKEY)
		r, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).ExchangeContext(ctx, m, addr)
		if err != nil {
			return 0
		}
		for _, rr := range r.Answer {
			if k, ok := rr.(*dns.DNSKEY); ok {
				tags = append(tags, k.KeyTag())
			}
		}
		slices.Sort(tags)
		return len(tags)
	}).WithTimeout(20*time.Second).WithPolling(100*time.Millisecond).Should(Equal(n), "DNSKEYs of %s", zone)
	return tags
}

func kinds(k agent.ZoneKeys) []string {
	var out []string
	for _, f := range k.Files {
		out = append(out, f.Kind)
	}
	slices.Sort(out)
	return out
}

func only(files []agent.KeyFile, kind string) []agent.KeyFile {
	return slices.DeleteFunc(slices.Clone(files), func(f agent.KeyFile) bool { return f.Kind != kind })
}

// publicAndPrivate are the key material files: .state files record
// timings named updates as it goes.
func publicAndPrivate(k agent.ZoneKeys) []agent.KeyFile {
	return slices.DeleteFunc(slices.Clone(k.Files), func(f agent.KeyFile) bool { return f.Kind == agent.KeyFileState })
}
