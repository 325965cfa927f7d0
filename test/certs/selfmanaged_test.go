package certs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/certs"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

const (
	secretName  = "webhook-server-cert"
	serviceName = "webhook-service"
)

// fixture is one isolated world: a namespace and a pair of webhook
// configurations named after the test.
type fixture struct {
	ns, mutating, validating string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	f := fixture{ns: name, mutating: name + "-mutating", validating: name + "-validating"}
	testkit.Must(t, k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}))
	f.createMutating(t)
	f.createValidating(t)
	return f
}

// Two webhooks per configuration, so injection must cover every entry. The
// rules match a resource nobody creates: the API server never calls them.
func (f fixture) clientConfig() admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
		Namespace: f.ns, Name: serviceName, Path: ptr.To("/never"), Port: ptr.To[int32](443)}}
}

func rules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.invalid"}, APIVersions: []string{"v1"}, Resources: []string{"nothings"}},
	}}
}

func (f fixture) createMutating(t *testing.T) {
	t.Helper()
	obj := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: f.mutating}}
	for _, n := range []string{"a.example.invalid", "b.example.invalid"} {
		obj.Webhooks = append(obj.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: n, ClientConfig: f.clientConfig(), Rules: rules(),
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	testkit.Must(t, k8sClient.Create(ctx, obj))
}

func (f fixture) createValidating(t *testing.T) {
	t.Helper()
	obj := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: f.validating}}
	for _, n := range []string{"a.example.invalid", "b.example.invalid"} {
		obj.Webhooks = append(obj.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: n, ClientConfig: f.clientConfig(), Rules: rules(),
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	testkit.Must(t, k8sClient.Create(ctx, obj))
}

func (f fixture) options(certDir string) certs.Options {
	return certs.Options{
		Namespace: f.ns, SecretName: secretName, ServiceName: serviceName,
		MutatingWebhookConfigurations:   []string{f.mutating},
		ValidatingWebhookConfigurations: []string{f.validating},
		CertDir:                         certDir,
	}
}

func (f fixture) dnsNames() []string {
	return []string{serviceName + "." + f.ns + ".svc", serviceName + "." + f.ns + ".svc.cluster.local"}
}

func (f fixture) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	testkit.Must(t, k8sClient.Get(ctx, types.NamespacedName{Namespace: f.ns, Name: secretName}, s))
	return s
}

// bundles returns every caBundle of both configurations.
func (f fixture) bundles(t *testing.T) [][]byte {
	t.Helper()
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	testkit.Must(t, k8sClient.Get(ctx, types.NamespacedName{Name: f.mutating}, m))
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	testkit.Must(t, k8sClient.Get(ctx, types.NamespacedName{Name: f.validating}, v))
	var out [][]byte
	for _, w := range m.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range v.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

func (f fixture) allInjected(t *testing.T, bundle []byte) bool {
	for _, b := range f.bundles(t) {
		if !bytes.Equal(b, bundle) {
			return false
		}
	}
	return true
}

func newManager(t *testing.T, o certs.Options) *certs.Manager {
	t.Helper()
	m, err := certs.New(k8sClient, o)
	testkit.Must(t, err)
	return m
}

// start runs m until the test ends and checks that it stops when asked.
func start(t *testing.T, m *certs.Manager) {
	t.Helper()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Start did not return within 10s of its context ending")
		}
	})
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, n := range []string{"tls.crt", "tls.key", "ca.crt"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		testkit.Must(t, err)
		out[n] = b
	}
	return out
}

func TestSelfManagedIssuesInjectsAndReuses(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	testkit.Must(t, newManager(t, f.options(dir)).Bootstrap(ctx))

	s := f.secret(t)
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %q, want %q", s.Type, corev1.SecretTypeTLS)
	}
	if s.Labels["app.kubernetes.io/managed-by"] != "bind-operator" {
		t.Errorf("Secret labels %v lack the managed-by label", s.Labels)
	}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt", "ca.key"} {
		if len(s.Data[k]) == 0 {
			t.Fatalf("Secret lacks %s", k)
		}
	}
	verifyServing(t, s.Data["tls.crt"], s.Data["ca.crt"], f.dnsNames()...)
	files := readDir(t, dir)
	for k, v := range files {
		if !bytes.Equal(v, s.Data[k]) {
			t.Errorf("%s in the certificate folder differs from the Secret", k)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "tls.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("tls.key mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if !f.allInjected(t, s.Data["ca.crt"]) {
		t.Fatal("caBundle not injected into every webhook")
	}

	// A restart (or a second replica with its own folder) adopts the
	// Secret: no new certificate, no write.
	dir2 := t.TempDir()
	testkit.Must(t, newManager(t, f.options(dir2)).Bootstrap(ctx))
	again := f.secret(t)
	if again.ResourceVersion != s.ResourceVersion {
		t.Fatalf("second start rewrote the Secret (resourceVersion %s -> %s)", s.ResourceVersion, again.ResourceVersion)
	}
	for k, v := range readDir(t, dir2) {
		if !bytes.Equal(v, s.Data[k]) {
			t.Errorf("second start: %s differs from the Secret", k)
		}
	}
}

func TestSelfManagedRenewsNearExpiryServingCertificate(t *testing.T) {
	f := newFixture(t)
	ca := issue(t, nil, "planted-ca", nil, time.Now().Add(2*365*24*time.Hour))
	leaf := issue(t, ca, f.dnsNames()[0], f.dnsNames(), time.Now().Add(time.Hour))
	testkit.Must(t, k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: secretName},
		Type:       corev1.SecretTypeTLS, Data: secretData(ca, leaf),
	}))

	testkit.Must(t, newManager(t, f.options(t.TempDir())).Bootstrap(ctx))
	s := f.secret(t)
	got := parseCerts(t, s.Data["tls.crt"])[0]
	if got.SerialNumber.Cmp(leaf.cert.SerialNumber) == 0 {
		t.Fatal("serving certificate one hour from expiry was not renewed")
	}
	if time.Until(got.NotAfter) < 80*24*time.Hour {
		t.Errorf("renewed certificate expires at %s, want about 90 days out", got.NotAfter)
	}
	if !bytes.Equal(s.Data["ca.crt"], ca.certPEM) || !bytes.Equal(s.Data["ca.key"], ca.keyPEM) {
		t.Error("renewing the serving certificate replaced a healthy CA")
	}
	if err := got.CheckSignatureFrom(ca.cert); err != nil {
		t.Errorf("renewed certificate not signed by the existing CA: %v", err)
	}
	verifyServing(t, s.Data["tls.crt"], s.Data["ca.crt"], f.dnsNames()...)
}

func TestSelfManagedKeepsCABundleInjected(t *testing.T) {
	f := newFixture(t)
	m := newManager(t, f.options(t.TempDir()))
	testkit.Must(t, m.Bootstrap(ctx))
	bundle := f.secret(t).Data["ca.crt"]
	start(t, m)

	// Someone (a GitOps tool re-applying manifests.yaml) empties caBundle.
	// Twice: the first reset may race with Start's initial round, the
	// second can only be repaired by reacting to the change.
	for round := 1; round <= 2; round++ {
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		testkit.Must(t, k8sClient.Get(ctx, types.NamespacedName{Name: f.validating}, v))
		for i := range v.Webhooks {
			v.Webhooks[i].ClientConfig.CABundle = nil
		}
		testkit.Must(t, k8sClient.Update(ctx, v))
		NewWithT(t).Eventually(func() bool { return f.allInjected(t, bundle) }).Should(BeTrue(), fmt.Sprintf("emptied caBundle re-injected (round %d)", round))
	}

	// The configuration is deleted and applied again, without a bundle.
	testkit.Must(t, k8sClient.Delete(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: f.mutating}}))
	NewWithT(t).Eventually(func() bool {
		err := k8sClient.Get(ctx, types.NamespacedName{Name: f.mutating}, &admissionregistrationv1.MutatingWebhookConfiguration{})
		return client.IgnoreNotFound(err) == nil && err != nil
	}).Should(BeTrue(), "mutating configuration gone")
	f.createMutating(t)
	NewWithT(t).Eventually(func() bool { return f.allInjected(t, bundle) }).Should(BeTrue(), "re-created configuration injected")

	if !bytes.Equal(f.secret(t).Data["ca.crt"], bundle) {
		t.Fatal("re-injection changed the CA")
	}
}

func TestSelfManagedRotatesCAWithHandover(t *testing.T) {
	f := newFixture(t)
	// A CA 30 days from expiry is inside the default 180-day renewal window;
	// its serving certificate (20 days left) is due as well.
	oldCA := issue(t, nil, "old-ca", nil, time.Now().Add(30*24*time.Hour))
	oldLeaf := issue(t, oldCA, f.dnsNames()[0], f.dnsNames(), time.Now().Add(20*24*time.Hour))
	testkit.Must(t, k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: secretName},
		Type:       corev1.SecretTypeTLS, Data: secretData(oldCA, oldLeaf),
	}))
	dir := t.TempDir()
	o := f.options(dir)
	o.CAHandover = 4 * time.Second
	m := newManager(t, o)
	testkit.Must(t, m.Bootstrap(ctx))

	// Phase 1: the bundle holds both CAs and is injected, but the served
	// certificate is still the old one (nobody trusted the new CA before).
	s := f.secret(t)
	bundle := parseCerts(t, s.Data["ca.crt"])
	if len(bundle) != 2 || !bundle[1].Equal(oldCA.cert) || bundle[0].Equal(oldCA.cert) {
		t.Fatalf("bundle after CA renewal has %d CAs, want [new, old]", len(bundle))
	}
	newCA := bundle[0]
	if !bytes.Equal(s.Data["tls.crt"], oldLeaf.certPEM) {
		t.Fatal("served certificate changed in the same step as the CA: clients could not have learned the new CA yet")
	}
	if !f.allInjected(t, s.Data["ca.crt"]) {
		t.Fatal("two-CA bundle not injected")
	}

	// Phase 2: after the handover, the served certificate comes from the new
	// CA, and the old CA stays trusted.
	start(t, m)
	NewWithT(t).Eventually(func() bool {
		leaf := parseCerts(t, f.secret(t).Data["tls.crt"])
		return len(leaf) == 1 && leaf[0].CheckSignatureFrom(newCA) == nil
	}).Should(BeTrue(), "serving certificate re-issued by the new CA")
	s = f.secret(t)
	if b := parseCerts(t, s.Data["ca.crt"]); len(b) != 2 || !b[1].Equal(oldCA.cert) {
		t.Fatal("old CA left the bundle before it expired")
	}
	verifyServing(t, s.Data["tls.crt"], s.Data["ca.crt"], f.dnsNames()...)
	NewWithT(t).Eventually(func() bool { return bytes.Equal(readDir(t, dir)["tls.crt"], f.secret(t).Data["tls.crt"]) }).Should(BeTrue(), "files follow the Secret")
	if !f.allInjected(t, s.Data["ca.crt"]) {
		t.Fatal("bundle not injected after the handover")
	}
}

func TestSelfManagedReplicasAgree(t *testing.T) {
	f := newFixture(t)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	var wg sync.WaitGroup
	errs := make([]error, len(dirs))
	for i, d := range dirs {
		m := newManager(t, f.options(d))
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = m.Bootstrap(ctx) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	// They raced to create the Secret; all must serve what it holds.
	s := f.secret(t)
	for i, d := range dirs {
		if got := readDir(t, d); !bytes.Equal(got["tls.crt"], s.Data["tls.crt"]) || !bytes.Equal(got["ca.crt"], s.Data["ca.crt"]) {
			t.Errorf("replica %d serves a certificate that is not the Secret's", i)
		}
	}
	if !f.allInjected(t, s.Data["ca.crt"]) {
		t.Fatal("injected bundle is not the Secret's")
	}
}

func TestSelfManagedNeverLogsKeys(t *testing.T) {
	// Every other test in the package has logged through logBuffer by now or
	// will have when this runs last; run a full cycle here to be sure.
	f := newFixture(t)
	testkit.Must(t, newManager(t, f.options(t.TempDir())).Bootstrap(ctx))
	s := f.secret(t)
	logs := logBuffer.String()
	if !strings.Contains(logs, "issued webhook certificates") {
		t.Fatalf("log capture is not working; captured:\n%s", logs)
	}
	for _, secretPart := range []string{"PRIVATE KEY", string(s.Data["tls.key"]), string(s.Data["ca.key"]), fmt.Sprintf("%x", s.Data["ca.key"])} {
		if strings.Contains(logs, secretPart) {
			t.Fatal("a private key appears in the logs")
		}
	}
}
