package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cert-manager/cert-manager/pkg/issuer/acme/dns/rfc2136"
	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// cert-manager's Issuer names TSIG algorithms its own way.
var certManagerAlgorithms = map[string]string{
	"hmac-sha1.": "HMACSHA1", "hmac-sha256.": "HMACSHA256", "hmac-sha512.": "HMACSHA512",
}

// TestCertManagerDNS01ThroughQueryService (issue 14 item 2): cert-manager's
// own RFC 2136 DNS-01 provider (pkg/issuer/acme/dns/rfc2136 v1.21.2), given
// the query Service as its nameserver and the key from a BindTSIGKey's
// Secret as it is laid out (tsigSecretSecretRef key "secret", key name and
// algorithm beside it), presents and cleans up challenge TXT records. Each
// attempt succeeds whichever pod the Service picks (the secondaries
// forward the signed UPDATE to the primary), and each record is served by
// every pod, then gone from every pod.
func TestCertManagerDNS01ThroughQueryService(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-dns01")
	a := authoritative{Namespace: ns, Name: "acme", Replicas: 3, Catalog: "catalog.acme.internal"}
	a.create(ctx, t)
	testkit.Must(t, env.Client.Create(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cert-manager"}}))
	const zone = "dns01.e2e.example"
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("zone", zone, "cert-manager")))
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	ips := a.servedByAll(ctx, t, zone)
	queryIP, err := env.Cluster.ServiceIP(ctx, ns, a.Name)
	testkit.Must(t, err)
	waitSOA(ctx, t, queryIP, zone, "query Service")

	key := readTSIGKey(ctx, t, ns, "cert-manager")
	algorithm, ok := certManagerAlgorithms[key.Algorithm]
	if !ok {
		t.Fatalf("no cert-manager name for algorithm %q", key.Algorithm)
	}
	provider, err := rfc2136.NewDNSProviderCredentials(net.JoinHostPort(queryIP, "53"), algorithm, key.Name, key.Secret)
	testkit.Must(t, err)

	// Enough attempts that the Service picks secondaries too (3 pods).
	const attempts = 12
	for i := range attempts {
		fqdn := fmt.Sprintf("_acme-challenge.host%d.%s.", i, zone)
		value := fmt.Sprintf("token-%d-%d", i, time.Now().UnixNano())
		start := time.Now()
		if err := provider.Present("", fqdn, zone+".", value); err != nil {
			t.Fatalf("attempt %d: Present through the query Service: %v", i, err)
		}
		for j, ip := range ips {
			waitTXT(ctx, t, ip, fqdn, value, fmt.Sprintf("%s-%d", a.Name, j))
		}
		served := time.Since(start)
		if err := provider.CleanUp("", fqdn, zone+".", value); err != nil {
			t.Fatalf("attempt %d: CleanUp through the query Service: %v", i, err)
		}
		for j, ip := range ips {
			waitTXT(ctx, t, ip, fqdn, "", fmt.Sprintf("%s-%d", a.Name, j))
		}
		t.Logf("attempt %d: presented and served by all %d pods in %s, cleaned up everywhere in %s", i, len(ips), served.Round(time.Millisecond), (time.Since(start) - served).Round(time.Millisecond))
	}
}

// waitTXT waits until server answers name TXT with exactly want (nothing
// when want is empty).
func waitTXT(ctx context.Context, t *testing.T, server, name, want, who string) {
	t.Helper()
	defer logSlow(t, time.Now(), "%s (%s) answered %s TXT %q", who, server, name, want)
	var wantSet []string
	if want != "" {
		wantSet = []string{want}
	}
	NewWithT(t).Eventually(func() ([]string, error) {
		in, err := localcluster.Dig(server, name, dns.TypeTXT)
		if err != nil {
			return nil, err
		}
		var got []string
		for _, rr := range in.Answer {
			if txt, ok := rr.(*dns.TXT); ok {
				got = append(got, strings.Join(txt.Txt, ""))
			}
		}
		return got, nil
	}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(20*time.Millisecond).Should(Equal(wantSet), "%s (%s) to serve %s TXT %q", who, server, name, want)
}
