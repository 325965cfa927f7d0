package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// externalDNSToolchain builds test/externaldns: external-dns v0.23.0 needs
// Go 1.27 (docs/testing.md).
const externalDNSToolchain = "go1.27.3"

var (
	externalDNSOnce sync.Once
	externalDNSBin  string
	externalDNSErr  error
)

// externalDNS builds the edns driver (external-dns' own provider, registry
// and planner; test/externaldns) once per test binary.
func externalDNS(t *testing.T) string {
	t.Helper()
	externalDNSOnce.Do(func() {
		dir, err := os.MkdirTemp("", "edns-")
		if err != nil {
			externalDNSErr = err
			return
		}
		externalDNSBin = filepath.Join(dir, "edns")
		start := time.Now()
		cmd := exec.Command("go", "build", "-o", externalDNSBin, ".")
		cmd.Dir = filepath.Join(testkit.RepoRoot(), "test", "externaldns")
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+externalDNSToolchain, "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			externalDNSErr = fmt.Errorf("building test/externaldns with %s: %v\n%s", externalDNSToolchain, err, out)
			return
		}
		t.Logf("built external-dns' driver (test/externaldns) in %s", time.Since(start).Round(time.Second))
	})
	if externalDNSErr != nil {
		t.Fatal(externalDNSErr)
	}
	return externalDNSBin
}

// edEndpoint is external-dns' endpoint.Endpoint as JSON.
type edEndpoint struct {
	DNSName    string   `json:"dnsName"`
	Targets    []string `json:"targets"`
	RecordType string   `json:"recordType"`
	RecordTTL  int64    `json:"recordTTL,omitempty"`
}

// edChanges is external-dns' plan.Changes as JSON.
type edChanges struct {
	Create    []edEndpoint `json:"create"`
	UpdateOld []edEndpoint `json:"updateOld"`
	UpdateNew []edEndpoint `json:"updateNew"`
	Delete    []edEndpoint `json:"delete"`
}

func (c edChanges) count() int {
	return len(c.Create) + len(c.UpdateNew) + len(c.Delete)
}

// TestExternalDNSDrivesAZone (issue 14 item 1): external-dns' own RFC 2136
// provider, TXT registry and planner (sigs.k8s.io/external-dns v0.23.0,
// flags parsed by its own parser, the TSIG secret from the environment as
// its Deployment takes it from the BindTSIGKey Secret) keep A, AAAA, CNAME
// and TXT endpoints of a BindZone through the cluster's query Service. It
// lists the zone by AXFR with the update key (allowUpdateKeyTransfer), on
// whichever pod the Service picks; it creates, updates and deletes its
// records with their ownership TXT records on every pod; a second owner's
// records, the zone's inline records and DNSRecords are left alone, even
// when external-dns wants a name a DNSRecord holds.
func TestExternalDNSDrivesAZone(t *testing.T) {
	t.Parallel()
	bin := externalDNS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-externaldns")
	a := authoritative{Namespace: ns, Name: "edns", Replicas: 3, Catalog: "catalog.edns.internal"}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	const zone = "edns.e2e.example"
	testkit.Must(t, env.Client.Create(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "external-dns"}}))
	z := a.catalogZone("zone", zone, "external-dns", v1.RecordSet{Name: "owned", Type: "A", Values: []string{"192.0.2.99"}})
	// Out of the catalog: the secondaries then take the zone's transfer
	// rules (the update key's AXFR) from its clause.
	z.Spec.CatalogZoneRef = nil
	z.Spec.AllowUpdateKeyTransfer = true
	testkit.Must(t, env.Client.Create(ctx, z))
	testkit.Must(t, env.Client.Create(ctx, &v1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: "zone"}, Name: "api", Type: "A",
			TTL: ptr.To[v1.TTL](60), Values: []string{"192.0.2.80"}},
	}))
	ips := a.servedByAll(ctx, t, zone)
	for i, ip := range ips {
		waitA(ctx, t, ip, "api."+zone, "192.0.2.80", fmt.Sprintf("%s-%d", a.Name, i))
	}
	queryIP, err := env.Cluster.ServiceIP(ctx, ns, a.Name)
	testkit.Must(t, err)
	key := readTSIGKey(ctx, t, ns, "external-dns")

	// reconcile runs one external-dns synchronisation for owner.
	// run runs one external-dns synchronisation for owner and returns its
	// standard output and error.
	run := func(owner string, desired []edEndpoint) ([]byte, []byte, error) {
		in, err := json.Marshal(desired)
		testkit.Must(t, err)
		cmd := exec.CommandContext(ctx, bin,
			"--provider=rfc2136", "--source=service", "--registry=txt", "--policy=sync",
			"--txt-owner-id="+owner, "--domain-filter="+zone,
			"--rfc2136-host="+queryIP, "--rfc2136-port=53", "--rfc2136-zone="+zone,
			"--rfc2136-tsig-keyname="+strings.TrimSuffix(key.Name, "."),
			"--rfc2136-tsig-secret-alg="+strings.TrimSuffix(key.Algorithm, "."),
			"--rfc2136-axfr",
			"--managed-record-types=A", "--managed-record-types=AAAA", "--managed-record-types=CNAME", "--managed-record-types=TXT",
		)
		cmd.Env = append(os.Environ(), "EXTERNAL_DNS_RFC2136_TSIG_SECRET="+key.Secret)
		cmd.Stdin = bytes.NewReader(in)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		return stdout.Bytes(), stderr.Bytes(), err
	}
	// reconcile is run, which must succeed, and the changes it applied.
	reconcile := func(owner string, desired []edEndpoint) edChanges {
		t.Helper()
		out, errOut, err := run(owner, desired)
		if err != nil {
			t.Fatalf("external-dns (owner %s) through the query Service %s: %v\n%s", owner, queryIP, err, errOut)
		}
		var ch edChanges
		testkit.Must(t, json.Unmarshal(out, &ch))
		return ch
	}
	// served waits until every pod answers name/type with want (nil: no
	// such records).
	served := func(name string, qtype uint16, want ...string) {
		t.Helper()
		for i, ip := range ips {
			NewWithT(t).Eventually(func() error {
				m := new(dns.Msg)
				m.SetQuestion(dns.Fqdn(name+"."+zone), qtype)
				m.RecursionDesired = false
				in, err := localcluster.Exchange("udp", ip, m)
				if err != nil {
					return err
				}
				var got []string
				for _, rr := range in.Answer {
					if rr.Header().Rrtype == qtype {
						got = append(got, strings.TrimPrefix(rr.String(), rr.Header().String()))
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					return fmt.Errorf("%s %v, want %v", dns.RcodeToString[in.Rcode], got, want)
				}
				return nil
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(),
				"%s-%d: %s %s", a.Name, i, name, dns.TypeToString[qtype])
		}
	}
	// axfr transfers the zone from server signed with the update key.
	axfr := func(server string) (chan *dns.Envelope, error) {
		addr, err := guardAddr(net.JoinHostPort(server, "53"))
		if err != nil {
			return nil, err
		}
		m := new(dns.Msg)
		m.SetAxfr(dns.Fqdn(zone))
		m.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
		tr := &dns.Transfer{TsigSecret: map[string]string{key.Name: key.Secret}}
		return tr.In(m, addr)
	}
	// owned counts the ownership TXT records of owner in the zone, read by
	// AXFR with the update key from the primary.
	owned := func(owner string) int {
		t.Helper()
		envs, err := axfr(ips[0])
		testkit.Must(t, err)
		n := 0
		for e := range envs {
			testkit.Must(t, e.Error)
			for _, rr := range e.RR {
				if txt, ok := rr.(*dns.TXT); ok && strings.Contains(strings.Join(txt.Txt, ""), "external-dns/owner="+owner) {
					n++
				}
			}
		}
		return n
	}

	teamA := []edEndpoint{
		{DNSName: "app." + zone, RecordType: "A", Targets: []string{"192.0.2.10"}, RecordTTL: 60},
		{DNSName: "app6." + zone, RecordType: "AAAA", Targets: []string{"2001:db8::10"}, RecordTTL: 60},
		{DNSName: "alias." + zone, RecordType: "CNAME", Targets: []string{"app." + zone}, RecordTTL: 60},
		{DNSName: "note." + zone, RecordType: "TXT", Targets: []string{"hello"}, RecordTTL: 60},
	}
	start := time.Now()
	ch := reconcile("team-a", teamA)
	NewWithT(t).Expect(ch.Create).To(HaveLen(len(teamA)), "%+v", ch)
	served("app", dns.TypeA, "192.0.2.10")
	served("app6", dns.TypeAAAA, "2001:db8::10")
	served("alias", dns.TypeCNAME, "app."+zone+".")
	served("note", dns.TypeTXT, `"hello"`)
	NewWithT(t).Expect(owned("team-a")).To(Equal(len(teamA)), "one ownership TXT record per endpoint")
	t.Logf("created: 4 endpoints and their ownership records served by all %d pods in %s", len(ips), time.Since(start).Round(time.Millisecond))

	// Listing again finds everything, whichever pod answers the AXFR:
	// nothing left to do.
	for i := range 6 {
		if ch := reconcile("team-a", teamA); ch.count() != 0 {
			t.Fatalf("run %d: external-dns planned %+v for a zone that matches its endpoints: its AXFR did not list them", i, ch)
		}
	}

	// Updates.
	teamA[0].Targets = []string{"192.0.2.11"}
	teamA[3].Targets = []string{"bye"}
	ch = reconcile("team-a", teamA)
	NewWithT(t).Expect(ch.UpdateNew).NotTo(BeEmpty(), "%+v", ch)
	served("app", dns.TypeA, "192.0.2.11")
	served("note", dns.TypeTXT, `"bye"`)

	// A second owner, and a name a DNSRecord holds: external-dns creates
	// its own, and leaves the DNSRecord's, which it does not own.
	teamB := []edEndpoint{{DNSName: "other." + zone, RecordType: "A", Targets: []string{"192.0.2.20"}, RecordTTL: 60}}
	reconcile("team-b", teamB)
	served("other", dns.TypeA, "192.0.2.20")
	ch = reconcile("team-a", append(slices.Clone(teamA), edEndpoint{DNSName: "api." + zone, RecordType: "A", Targets: []string{"192.0.2.66"}, RecordTTL: 60}))
	NewWithT(t).Expect(ch.count()).To(BeZero(), "external-dns planned changes for a name it does not own: %+v", ch)
	served("api", dns.TypeA, "192.0.2.80")

	// Around external-dns' registry: a raw UPDATE signed with the update
	// key that would overwrite the DNSRecord or the inline record is
	// refused with REFUSED, whichever pod the query Service picks (a
	// secondary forwards it to the primary, which refuses it), and
	// changes nothing.
	for i := range 6 {
		for _, target := range []string{"api", "owned"} {
			m := new(dns.Msg)
			m.SetUpdate(dns.Fqdn(zone))
			rr, err := dns.NewRR(target + "." + zone + ". 60 IN A 198.18.0.66")
			testkit.Must(t, err)
			m.RemoveRRset([]dns.RR{rr})
			m.Insert([]dns.RR{rr})
			m.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
			addr, err := guardAddr(net.JoinHostPort(queryIP, "53"))
			testkit.Must(t, err)
			r, _, err := (&dns.Client{Net: "tcp", Timeout: 10 * time.Second, TsigSecret: map[string]string{key.Name: key.Secret}}).ExchangeContext(ctx, m, addr)
			testkit.Must(t, err)
			if r.Rcode != dns.RcodeRefused {
				t.Fatalf("UPDATE %d of %s A signed with the update key through the query Service: %s, want REFUSED", i, target, dns.RcodeToString[r.Rcode])
			}
		}
	}
	served("api", dns.TypeA, "192.0.2.80")
	served("owned", dns.TypeA, "192.0.2.99")

	// team-a deletes everything it owns, and only that.
	ch = reconcile("team-a", nil)
	NewWithT(t).Expect(ch.Delete).To(HaveLen(len(teamA)), "%+v", ch)
	served("app", dns.TypeA)
	served("app6", dns.TypeAAAA)
	served("alias", dns.TypeCNAME)
	served("note", dns.TypeTXT)
	NewWithT(t).Expect(owned("team-a")).To(BeZero())
	served("other", dns.TypeA, "192.0.2.20")
	served("api", dns.TypeA, "192.0.2.80")
	served("owned", dns.TypeA, "192.0.2.99")
	NewWithT(t).Expect(owned("team-b")).To(Equal(1))

	// Without allowUpdateKeyTransfer, the update key cannot list the zone,
	// and external-dns stops before it changes anything.
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(z), z))
	z.Spec.AllowUpdateKeyTransfer = false
	testkit.Must(t, env.Client.Update(ctx, z))
	NewWithT(t).Eventually(func() error {
		for i, ip := range ips {
			envs, err := axfr(ip)
			if err != nil {
				return err
			}
			refused := false
			for e := range envs {
				if e.Error != nil {
					refused = strings.Contains(e.Error.Error(), "bad xfr rcode: 5")
				}
			}
			if !refused {
				return fmt.Errorf("%s-%d still lets the update key transfer the zone", a.Name, i)
			}
		}
		return nil
	}).WithContext(ctx).Should(Succeed(), "the update key's AXFR is refused on every pod once the zone no longer allows it")
	_, errOut, err := run("team-b", nil)
	if err == nil || !strings.Contains(string(errOut), "bad xfr rcode: 5") {
		t.Fatalf("external-dns listed a zone that refuses its key's AXFR, or stopped for another reason (%v):\n%s", err, errOut)
	}
	t.Logf("without allowUpdateKeyTransfer external-dns stops: %s", strings.TrimSpace(string(errOut)))
	served("other", dns.TypeA, "192.0.2.20")
}
