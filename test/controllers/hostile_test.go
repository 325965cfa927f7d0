package controllers

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"git.unkin.net/unkin/bind-operator/agent"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/zones"
	"git.unkin.net/unkin/bind-operator/dnsclient"
	"git.unkin.net/unkin/bind-operator/pki"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// hostileTSIG is the key the operator signs with; the hostile server
// knows its name but signs with another secret.
const hostileTSIG = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I="

// dnsReply builds what a hostile primary writes back for one request: the
// bytes (DNS/TCP framing included) and whether it hangs up afterwards.
type dnsReply func(req *dns.Msg) (out []byte, hangUp bool)

// framed prefixes a DNS/TCP message with its length.
func framed(b []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...)
}

func packed(m *dns.Msg) []byte {
	b, err := m.Pack()
	if err != nil {
		panic(err)
	}
	return b
}

// junk is deterministic noise with a terminal's favourite bytes in it.
func junk(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	copy(b[12:], "\n\x1b[31m\u202e\x00")
	return b
}

// hostileReplies: every one must end in a failed update; only a refusal
// (even an unverifiable one) is reported as such, the rest as a primary
// that could not be reached.
var hostileReplies = []struct {
	name, reason string
	reply        dnsReply
}{
	{"garbage", v1.ReasonZoneNotReady, func(*dns.Msg) ([]byte, bool) { return framed(junk(300)), false }},
	{"garbage of 64 KiB", v1.ReasonZoneNotReady, func(*dns.Msg) ([]byte, bool) {
		return framed(junk(65535)), false
	}},
	{"truncated message", v1.ReasonZoneNotReady, func(req *dns.Msg) ([]byte, bool) {
		m := new(dns.Msg)
		m.SetReply(req)
		b := packed(m)
		return append(binary.BigEndian.AppendUint16(nil, 512), b[:7]...), true
	}},
	{"header cut short", v1.ReasonZoneNotReady, func(req *dns.Msg) ([]byte, bool) {
		return framed(packed(new(dns.Msg).SetReply(req))[:5]), false
	}},
	{"hang up without a reply", v1.ReasonZoneNotReady, func(*dns.Msg) ([]byte, bool) { return nil, true }},
	{"wrong message ID", v1.ReasonZoneNotReady, func(req *dns.Msg) ([]byte, bool) {
		m := new(dns.Msg)
		m.SetReply(req)
		m.Id = req.Id ^ 0x5a5a
		return framed(packed(m)), false
	}},
	{"success signed with another secret", v1.ReasonZoneNotReady, func(req *dns.Msg) ([]byte, bool) {
		m := new(dns.Msg)
		m.SetReply(req)
		var mac string
		if t := req.IsTsig(); t != nil {
			mac = t.MAC
			m.SetTsig(t.Hdr.Name, t.Algorithm, 300, time.Now().Unix())
		}
		b, _, err := dns.TsigGenerate(m, "b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldC1vdGhlcg==", mac, false)
		if err != nil {
			panic(err)
		}
		return framed(b), false
	}},
	{"success without signature", v1.ReasonZoneNotReady, func(req *dns.Msg) ([]byte, bool) {
		return framed(packed(new(dns.Msg).SetReply(req))), false
	}},
	{"unsigned NOTAUTH with BADSIG", v1.ReasonUpdateRefused, func(req *dns.Msg) ([]byte, bool) {
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeNotAuth)
		if t := req.IsTsig(); t != nil {
			m.Extra = append(m.Extra, &dns.TSIG{
				Hdr:       dns.RR_Header{Name: t.Hdr.Name, Rrtype: dns.TypeTSIG, Class: dns.ClassANY},
				Algorithm: t.Algorithm, TimeSigned: uint64(time.Now().Unix()), Fudge: 300,
				OrigId: req.Id, Error: dns.RcodeBadSig,
			})
		}
		return framed(packed(m)), false
	}},
}

// hostileDNS is a loopback DNS/TCP server that answers every request with
// reply. Every connection is bounded in messages and time.
type hostileDNS struct {
	addr     string
	requests atomic.Int64
}

func startHostileDNS(t *testing.T, reply dnsReply) *hostileDNS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testkit.Must(t, err)
	h := &hostileDNS{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("hostile DNS connections outlived the test by 15s")
		}
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				for range 32 {
					var n uint16
					if binary.Read(c, binary.BigEndian, &n) != nil {
						return
					}
					buf := make([]byte, n)
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					h.requests.Add(1)
					req := new(dns.Msg)
					if req.Unpack(buf) != nil {
						return
					}
					out, hangUp := reply(req)
					if len(out) > 0 {
						if _, err := c.Write(out); err != nil {
							return
						}
					}
					if hangUp {
						return
					}
				}
			}()
		}
	}()
	return h
}

// printableBounded fails the test unless msg is one printable line no
// longer than the operator's bound for untrusted text.
func printableBounded(t *testing.T, what, msg string) {
	t.Helper()
	if len(msg) > agent.MaxMessageBytes+len("...") {
		t.Errorf("%s: message of %d bytes, want at most %d", what, len(msg), agent.MaxMessageBytes+3)
	}
	for _, r := range msg {
		if r != ' ' && !unicode.IsPrint(r) {
			t.Errorf("%s: message holds %U: %q", what, r, msg)
			return
		}
	}
}

// reconcilePanics reads controller-runtime's count of recovered panics.
func reconcilePanics(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	testkit.Must(t, err)
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_panics_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, "controller") == controller {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A DNSRecord whose zone's primary answers UPDATEs with garbage, cut
// messages, another message's ID or a bad signature ends Ready=False with
// a short printable message; nothing panics, and the controller goes on
// applying records to a well-behaved named afterwards.
func TestDNSRecordHostilePrimary(t *testing.T) {
	f := keyNamespace(t)
	key, err := dnsclient.NewKey("upd", "hmac-sha256", hostileTSIG)
	testkit.Must(t, err)
	panicsBefore := reconcilePanics(t, "dnsrecord")
	servers := make([]*hostileDNS, len(hostileReplies))
	for i, c := range hostileReplies {
		zone := fmt.Sprintf("hostile%d.test", i)
		servers[i] = startHostileDNS(t, c.reply)
		resolver.set(f.ns, zone, servers[i].addr, key)
		f.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hostile%d", i)}, Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: v1.DomainName(zone),
		}})
		f.create(&v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rec%d", i)}, Spec: v1.DNSRecordSpec{
			ZoneRef: v1.ZoneReference{Name: fmt.Sprintf("hostile%d", i)}, Name: "www", Type: "A", Values: []string{"192.0.2.10"},
		}})
	}
	for i, c := range hostileReplies {
		t.Run(c.name, func(t *testing.T) {
			var r v1.DNSRecord
			NewWithT(t).Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, f.key(fmt.Sprintf("rec%d", i)), &r)).To(Succeed())
				g.Expect(meta.FindStatusCondition(r.Status.Conditions, v1.ConditionReady)).NotTo(BeNil())
				g.Expect(r.Status.ObservedGeneration).To(Equal(r.Generation))
			}).Should(Succeed(), "the DNSRecord to report the failed update")
			cond := meta.FindStatusCondition(r.Status.Conditions, v1.ConditionReady)
			if servers[i].requests.Load() == 0 {
				t.Fatal("the hostile primary never got an UPDATE")
			}
			if cond.Status != metav1.ConditionFalse || cond.Reason != c.reason {
				t.Errorf("Ready = %s/%s %q, want False/%s", cond.Status, cond.Reason, cond.Message, c.reason)
			}
			if c.reason == v1.ReasonUpdateRefused && r.Status.LastRcode != "NOTAUTH" {
				t.Errorf("lastRcode %q, want the refusal's NOTAUTH", r.Status.LastRcode)
			}
			if len(r.Status.AppliedValues) != 0 {
				t.Errorf("a hostile reply was taken for success: applied %v", r.Status.AppliedValues)
			}
			printableBounded(t, c.name, cond.Message)
			t.Logf("%s/%s: %s", cond.Reason, r.Status.LastRcode, cond.Message)
		})
	}
	if p := reconcilePanics(t, "dnsrecord"); p != panicsBefore {
		t.Errorf("%v reconcile panics recovered during hostile replies", p-panicsBefore)
	}

	// Deleted, they stop retrying against servers that are about to go.
	for i := range hostileReplies {
		testkit.Must(t, k8sClient.Delete(ctx, &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: fmt.Sprintf("rec%d", i)}}))
	}

	// The controller still works: a record on a real named applies.
	e := newRecordEnv(t)
	e.create(newRecord("after", "after", "A", "192.0.2.44"))
	e.waitRecord("after", v1.ConditionReady, metav1.ConditionTrue, v1.ReasonApplied)
	e.waitServed("after.example.com", dns.TypeA, "192.0.2.44")
}

// agentReply is what a hostile agent answers to an ensure-batch request.
type agentReply func(w http.ResponseWriter, reqs []agent.EnsureZoneRequest)

var hostileAgentReplies = []struct {
	name, reason, contains string
	reply                  agentReply
}{
	{"malformed JSON", v1.ReasonAgentError, "unexpected end of JSON", func(w http.ResponseWriter, _ []agent.EnsureZoneRequest) {
		_, _ = w.Write([]byte(`{"results":[{"zone":"`))
	}},
	{"oversized reply", v1.ReasonAgentError, "reply larger than", func(w http.ResponseWriter, _ []agent.EnsureZoneRequest) {
		chunk := []byte(strings.Repeat(" ", 1<<20))
		for range agent.MaxReplyBytes>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}},
	{"results for another zone", v1.ReasonAgentError, "result for zone", func(w http.ResponseWriter, reqs []agent.EnsureZoneRequest) {
		out := make([]agent.EnsureZoneResult, len(reqs))
		for i := range out {
			out[i] = agent.EnsureZoneResult{Zone: "evil\n\x1b[2J\u202e" + strings.Repeat("z", 5000), Action: agent.ActionAdded}
		}
		_ = json.NewEncoder(w).Encode(agent.EnsureZonesResponse{Results: out})
	}},
	{"wrong number of results", v1.ReasonAgentError, "0 results for 1 zones", func(w http.ResponseWriter, _ []agent.EnsureZoneRequest) {
		_, _ = w.Write([]byte(`{"results":[]}`))
	}},
	{"huge error text", v1.ReasonAgentError, "agent: 500", func(w http.ResponseWriter, _ []agent.EnsureZoneRequest) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("boom\r\n\x1b]0;owned\x07" + strings.Repeat("\u202eX", 100000)))
	}},
	{"refusal naming no entry", v1.ReasonInvalidZone, "refused the zone: zones[", func(w http.ResponseWriter, _ []agent.EnsureZoneRequest) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(agent.ErrorResponse{Error: "zones[99999999999999999999]: no\n" + strings.Repeat("!", 3000), Field: "zones[-1]."})
	}},
	{"named refusal with control bytes", v1.ReasonInvalidZone, "named refused", func(w http.ResponseWriter, reqs []agent.EnsureZoneRequest) {
		out := make([]agent.EnsureZoneResult, len(reqs))
		for i, r := range reqs {
			out[i] = agent.EnsureZoneResult{View: r.View, Zone: r.Zone, Error: "\x00\x1b[31m" + strings.Repeat("no ", 4000)}
		}
		_ = json.NewEncoder(w).Encode(agent.EnsureZonesResponse{Results: out})
	}},
}

// hostileEndpoints puts the cluster's primary pod at a hostile agent.
type hostileEndpoints struct{ agentAddr string }

func (h hostileEndpoints) Pods(context.Context, *v1.BindCluster) ([]clusterpods.PodEndpoint, error) {
	return []clusterpods.PodEndpoint{{Pod: "dns-0", Primary: true, Notify: "127.0.0.1", DNSAddr: "127.0.0.1:9", AgentAddr: h.agentAddr}}, nil
}

func (hostileEndpoints) Transfer(context.Context, *v1.BindCluster) (string, int32, error) {
	return "127.0.0.1", 9, nil
}

// A BindZone whose primary's agent answers with malformed, oversized or
// hostile JSON reports the agent problem in its Ready condition, in a
// short printable message, and nothing panics.
func TestBindZoneHostileAgent(t *testing.T) {
	f := newFixture(t)
	// The agent presents a certificate from the cluster's own agent CA,
	// as a pod's would: the hostile part is what it says, not who it is.
	var caSecret corev1.Secret
	f.g.Eventually(func() error { return k8sClient.Get(ctx, f.key("dns-agent-ca"), &caSecret) }).Should(Succeed(), "the cluster's agent CA")
	ca, err := pki.LoadCA(caSecret.Data[agent.FileCA], caSecret.Data[agent.FileCAKey])
	testkit.Must(t, err)
	pair, err := agent.IssueServer(ca, time.Hour)
	testkit.Must(t, err)
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	testkit.Must(t, err)

	var mode atomic.Int64
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		var req agent.EnsureZonesRequest
		if r.URL.Path != agent.PathEnsureBatch || json.NewDecoder(io.LimitReader(r.Body, agent.MaxBatchBytes)).Decode(&req) != nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		hostileAgentReplies[mode.Load()].reply(w, req.Zones)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	srv.StartTLS()
	defer srv.Close()

	// A manager of its own, watching only this namespace, runs the
	// BindZone controller against the hostile agent.
	stop, err := testkit.StartManager(ctx, cfg, ctrl.Options{
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{f.ns: {}}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}, func(mgr ctrl.Manager) error {
		return (&zones.BindZoneReconciler{Client: mgr.GetClient(), Endpoints: hostileEndpoints{strings.TrimPrefix(srv.URL, "https://")}}).SetupWithManager(mgr)
	})
	testkit.Must(t, err)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	panicsBefore := reconcilePanics(t, "bindzone")
	for i, c := range hostileAgentReplies {
		t.Run(c.name, func(t *testing.T) {
			mode.Store(int64(i))
			before := hits.Load()
			// A new annotation value is a new reconcile against this reply.
			updateLatest(t, f.key("example-com"), &v1.BindZone{}, func(z *v1.BindZone) {
				if z.Annotations == nil {
					z.Annotations = map[string]string{}
				}
				z.Annotations["test.bind.unkin.net/hostile"] = c.name
			})
			var cond *metav1.Condition
			NewWithT(t).Eventually(func(g Gomega) {
				var z v1.BindZone
				g.Expect(k8sClient.Get(ctx, f.key("example-com"), &z)).To(Succeed())
				g.Expect(hits.Load()).To(BeNumerically(">", before), "the agent was called")
				cond = meta.FindStatusCondition(z.Status.Conditions, v1.ConditionReady)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Reason).To(Equal(c.reason))
				g.Expect(cond.Message).To(ContainSubstring(c.contains))
			}).Should(Succeed(), "the BindZone to report the agent's reply")
			if cond.Status != metav1.ConditionFalse {
				t.Errorf("Ready = %s for a hostile agent", cond.Status)
			}
			printableBounded(t, c.name, cond.Message)
			t.Logf("%s: %.200s", cond.Reason, cond.Message)
		})
	}
	if p := reconcilePanics(t, "bindzone"); p != panicsBefore {
		t.Errorf("%v reconcile panics recovered during hostile agent replies", p-panicsBefore)
	}
}
