// Package certmanager tests the cert-manager install path, `kubectl apply
// --server-side -f crds.yaml -f install-cert-manager.yaml` of the release
// (config/default), on the real node of test/localcluster: cert-manager's
// real CRDs are installed first (from the cert-manager module in go.mod,
// deploy/crds), then the release's install files, then the operator must come up with the
// cert-manager-issued Secret mounted and its webhooks must serve with the
// injected CA.
//
// The only stand-in in the end-to-end tests is here: cert-manager's
// controller and cainjector. Their binaries cannot be built on these
// machines — their Go modules are not served by the module proxy (404) and
// a dependency (github.com/Venafi/vcert/v5) is refused (403) — and their
// images cannot be pulled here. So StartStandIn does for the
// objects config/certmanager creates what those two do, with cert-manager's
// own Go types and the project's pki package: a SelfSigned Issuer's
// Certificate becomes a self-signed CA, a CA Issuer's Certificate a leaf
// signed by the CA in the Issuer's Secret; each lands in the Secret named by
// spec.secretName as cert-manager lays it out (type kubernetes.io/tls with
// tls.crt, tls.key in the requested encoding and ca.crt, cert-manager's
// annotations); Certificates and Issuers get Ready conditions; and
// ca.crt is copied into the caBundle of every webhook of each
// Mutating/ValidatingWebhookConfiguration annotated
// cert-manager.io/inject-ca-from=<namespace>/<certificate>. Everything
// else — the operator's image, its manifests, the API server, the kubelet
// mounting the Secret — is the real thing.
package certmanager

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"git.unkin.net/unkin/bind-operator/pki"
	"git.unkin.net/unkin/bind-operator/test/e2e"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// Scheme is the project's scheme plus cert-manager.io/v1.
func Scheme() *runtime.Scheme {
	s := testkit.Scheme()
	if err := cmapi.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// CRDDir is deploy/crds of the cert-manager module go.mod requires (the
// one whose Go types the stand-in uses), downloaded when missing.
func CRDDir(ctx context.Context) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/cert-manager/cert-manager")
	cmd.Dir = testkit.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download github.com/cert-manager/cert-manager: %w", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download printed no module folder: %v", err)
	}
	return filepath.Join(mod.Dir, "deploy", "crds"), nil
}

// Install is an e2e.Options.BeforeInstall: it applies cert-manager's CRDs
// with kubectl, as a user installing cert-manager does, waits until they
// are established, and starts the stand-in for cert-manager's controller
// and cainjector until the environment stops.
func Install(ctx context.Context, e *e2e.Env) error {
	dir, err := CRDDir(ctx)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no cert-manager CRDs in %s: %v", dir, err)
	}
	args := []string{"apply", "--server-side"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	out, err := e.Cluster.Kubectl(ctx, args...)
	if err != nil {
		return err
	}
	var crds []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "customresourcedefinition") {
			crds = append(crds, f[0])
		}
	}
	if _, err := e.Cluster.Kubectl(ctx, append([]string{"wait", "--for=condition=Established", "--timeout=60s"}, crds...)...); err != nil {
		return err
	}
	stop, err := StartStandIn(context.Background(), e.Cluster.Config())
	if err != nil {
		return err
	}
	e.OnStop(func() { _ = stop() })
	return nil
}

// StartStandIn runs the stand-in for cert-manager's controller and
// cainjector against cfg until stop is called.
func StartStandIn(ctx context.Context, cfg *rest.Config) (stop func() error, err error) {
	return testkit.StartManager(ctx, cfg, ctrl.Options{Scheme: Scheme()}, func(mgr ctrl.Manager) error {
		r := &standIn{Client: mgr.GetClient()}
		// Every event leads to the Certificates it concerns: those of the
		// Issuer's or Secret's namespace, or the one a webhook
		// configuration injects from.
		sameNamespace := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			var list cmapi.CertificateList
			if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
				return nil
			}
			var out []reconcile.Request
			for _, c := range list.Items {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
			}
			return out
		})
		injectFrom := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			ns, name, ok := strings.Cut(o.GetAnnotations()[cmapi.WantInjectAnnotation], "/")
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
		})
		return ctrl.NewControllerManagedBy(mgr).
			Named("cert-manager-stand-in").
			For(&cmapi.Certificate{}).
			Watches(&cmapi.Issuer{}, sameNamespace).
			Watches(&corev1.Secret{}, sameNamespace).
			Watches(&admissionregistrationv1.MutatingWebhookConfiguration{}, injectFrom).
			Watches(&admissionregistrationv1.ValidatingWebhookConfiguration{}, injectFrom).
			Complete(r)
	})
}

type standIn struct{ client.Client }

// defaultDuration is cert-manager's default certificate lifetime.
const defaultDuration = 90 * 24 * time.Hour

func (r *standIn) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		// The cache was behind a write: look again with fresh objects.
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	return res, err
}

func (r *standIn) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cert cmapi.Certificate
	if err := r.Get(ctx, req.NamespacedName, &cert); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ref := cert.Spec.IssuerRef
	if (ref.Kind != "" && ref.Kind != cmapi.IssuerKind) || (ref.Group != "" && ref.Group != "cert-manager.io") {
		return reconcile.Result{}, r.setCertReady(ctx, &cert, false, "UnsupportedIssuer", fmt.Sprintf("the stand-in handles namespaced cert-manager.io Issuers only, not %s %s", ref.Kind, ref.Group))
	}
	var issuer cmapi.Issuer
	if err := r.Get(ctx, client.ObjectKey{Namespace: cert.Namespace, Name: ref.Name}, &issuer); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.setCertReady(ctx, &cert, false, "IssuerNotFound", fmt.Sprintf("Issuer %q not found", ref.Name))
		}
		return reconcile.Result{}, err
	}

	// The signer: none for a self-signed Certificate, else the CA in the
	// CA Issuer's Secret.
	var ca *pki.KeyPair
	switch {
	case issuer.Spec.SelfSigned != nil:
		if !cert.Spec.IsCA {
			return reconcile.Result{}, r.setCertReady(ctx, &cert, false, "Unsupported", "the stand-in issues self-signed CA certificates only")
		}
	case issuer.Spec.CA != nil:
		var s corev1.Secret
		err := r.Get(ctx, client.ObjectKey{Namespace: issuer.Namespace, Name: issuer.Spec.CA.SecretName}, &s)
		if err == nil {
			ca, err = pki.LoadCA(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		}
		if err != nil {
			msg := fmt.Sprintf("Error getting keypair for CA issuer: %v", err)
			if err := r.setIssuerReady(ctx, &issuer, false, "ErrGetKeyPair", msg); err != nil {
				return reconcile.Result{}, err
			}
			if err := r.setCertReady(ctx, &cert, false, "IssuerNotReady", msg); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
	default:
		return reconcile.Result{}, r.setCertReady(ctx, &cert, false, "UnsupportedIssuer", "the stand-in handles SelfSigned and CA Issuers only")
	}
	if err := r.setIssuerReady(ctx, &issuer, true, "KeyPairVerified", "Signing CA verified"); err != nil {
		return reconcile.Result{}, err
	}

	var secret corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: cert.Namespace, Name: cert.Spec.SecretName}, &secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	exists := err == nil
	current, reason := upToDate(&cert, &secret, ca)
	if !current {
		kp, caPEM, err := issue(&cert, ca)
		if err != nil {
			return reconcile.Result{}, r.setCertReady(ctx, &cert, false, "Failed", err.Error())
		}
		keyPEM, err := encodeKey(kp.KeyPEM, cert.Spec.PrivateKey)
		if err != nil {
			return reconcile.Result{}, err
		}
		secret.Namespace, secret.Name = cert.Namespace, cert.Spec.SecretName
		secret.Type = corev1.SecretTypeTLS
		secret.Data = map[string][]byte{corev1.TLSCertKey: kp.CertPEM, corev1.TLSPrivateKeyKey: keyPEM, cmmeta.TLSCAKey: caPEM}
		stampSecret(&secret, &cert, &issuer, kp.Cert)
		if exists {
			err = r.Update(ctx, &secret)
		} else {
			err = r.Create(ctx, &secret)
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		revision := 1
		if cert.Status.Revision != nil {
			revision = *cert.Status.Revision + 1
		}
		cert.Status.Revision = &revision
		ctrl.LoggerFrom(ctx).Info("issued", "certificate", req.NamespacedName, "secret", secret.Name, "why", reason, "revision", revision)
	}

	leaf, err := pki.DecodeCerts(secret.Data[corev1.TLSCertKey])
	if err != nil {
		return reconcile.Result{}, err
	}
	cert.Status.NotBefore = &metav1.Time{Time: leaf[0].NotBefore}
	cert.Status.NotAfter = &metav1.Time{Time: leaf[0].NotAfter}
	renewBefore := leaf[0].NotAfter.Sub(leaf[0].NotBefore) / 3
	if cert.Spec.RenewBefore != nil {
		renewBefore = cert.Spec.RenewBefore.Duration
	}
	cert.Status.RenewalTime = &metav1.Time{Time: leaf[0].NotAfter.Add(-renewBefore)}
	if err := r.setCertReady(ctx, &cert, true, "Ready", "Certificate is up to date and has not expired"); err != nil {
		return reconcile.Result{}, err
	}
	// cainjector: the CA of this Certificate's Secret into every webhook
	// configuration that asks for it.
	return reconcile.Result{}, r.inject(ctx, &cert, secret.Data[cmmeta.TLSCAKey])
}

// upToDate tells whether the Secret holds a certificate for cert's current
// spec, signed by ca (self-signed when nil), that is not due for renewal.
func upToDate(cert *cmapi.Certificate, s *corev1.Secret, ca *pki.KeyPair) (bool, string) {
	if s.Data == nil {
		return false, "no Secret"
	}
	kp, err := pki.LoadKeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return false, "unreadable key pair: " + err.Error()
	}
	if ca != nil && !kp.IssuedBy(ca) {
		return false, "not signed by the Issuer's CA"
	}
	if kp.Cert.IsCA != cert.Spec.IsCA || kp.Cert.Subject.CommonName != cert.Spec.CommonName ||
		!slices.Equal(slices.Sorted(slices.Values(kp.Cert.DNSNames)), slices.Sorted(slices.Values(cert.Spec.DNSNames))) {
		return false, "spec changed"
	}
	renewBefore := kp.Cert.NotAfter.Sub(kp.Cert.NotBefore) / 3
	if cert.Spec.RenewBefore != nil {
		renewBefore = cert.Spec.RenewBefore.Duration
	}
	if time.Now().After(kp.Cert.NotAfter.Add(-renewBefore)) {
		return false, "due for renewal"
	}
	return true, ""
}

// issue creates the key pair for cert: a self-signed CA when ca is nil,
// else a leaf signed by ca. It returns the pair and ca.crt's content.
func issue(cert *cmapi.Certificate, ca *pki.KeyPair) (*pki.KeyPair, []byte, error) {
	validity := defaultDuration
	if cert.Spec.Duration != nil {
		validity = cert.Spec.Duration.Duration
	}
	now := time.Now()
	if ca == nil {
		kp, err := pki.NewCA(pkix.Name{CommonName: cert.Spec.CommonName}, now, validity)
		if err != nil {
			return nil, nil, err
		}
		// A self-signed certificate is its own CA.
		return kp, kp.CertPEM, nil
	}
	if cert.Spec.IsCA {
		return nil, nil, errors.New("the stand-in does not issue intermediate CAs")
	}
	usage := x509.ExtKeyUsageServerAuth
	if slices.Contains(cert.Spec.Usages, cmapi.UsageClientAuth) && !slices.Contains(cert.Spec.Usages, cmapi.UsageServerAuth) {
		usage = x509.ExtKeyUsageClientAuth
	}
	var ips []net.IP
	for _, s := range cert.Spec.IPAddresses {
		if ip := net.ParseIP(s); ip != nil {
			ips = append(ips, ip)
		}
	}
	kp, err := ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: cert.Spec.CommonName}, DNSNames: cert.Spec.DNSNames, IPAddresses: ips, Usage: usage}, now, validity)
	if err != nil {
		return nil, nil, err
	}
	return kp, ca.CertPEM, nil
}

// encodeKey writes the key as cert-manager does: PKCS#1 (for ECDSA, SEC 1
// "EC PRIVATE KEY") unless the Certificate asks for PKCS#8.
func encodeKey(pkcs8PEM []byte, spec *cmapi.CertificatePrivateKey) ([]byte, error) {
	if spec != nil && spec.Encoding == cmapi.PKCS8 {
		return pkcs8PEM, nil
	}
	key, err := pki.DecodeKey(pkcs8PEM)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// stampSecret sets the labels and annotations cert-manager puts on a
// Certificate's Secret.
func stampSecret(s *corev1.Secret, cert *cmapi.Certificate, issuer *cmapi.Issuer, leaf *x509.Certificate) {
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if t := cert.Spec.SecretTemplate; t != nil {
		for k, v := range t.Labels {
			s.Labels[k] = v
		}
		for k, v := range t.Annotations {
			s.Annotations[k] = v
		}
	}
	s.Labels[cmapi.PartOfCertManagerControllerLabelKey] = "true"
	var ips []string
	for _, ip := range leaf.IPAddresses {
		ips = append(ips, ip.String())
	}
	for k, v := range map[string]string{
		cmapi.CertificateNameKey:       cert.Name,
		cmapi.IssuerNameAnnotationKey:  issuer.Name,
		cmapi.IssuerKindAnnotationKey:  cmapi.IssuerKind,
		cmapi.IssuerGroupAnnotationKey: "cert-manager.io",
		cmapi.CommonNameAnnotationKey:  leaf.Subject.CommonName,
		cmapi.AltNamesAnnotationKey:    strings.Join(leaf.DNSNames, ","),
		cmapi.IPSANAnnotationKey:       strings.Join(ips, ","),
		cmapi.URISANAnnotationKey:      "",
	} {
		s.Annotations[k] = v
	}
}

// inject copies caPEM into the caBundle of every webhook of the webhook
// configurations annotated inject-ca-from=<cert's namespace>/<cert's name>.
func (r *standIn) inject(ctx context.Context, cert *cmapi.Certificate, caPEM []byte) error {
	want := cert.Namespace + "/" + cert.Name
	var mutating admissionregistrationv1.MutatingWebhookConfigurationList
	if err := r.List(ctx, &mutating); err != nil {
		return err
	}
	for i := range mutating.Items {
		wc := &mutating.Items[i]
		if wc.Annotations[cmapi.WantInjectAnnotation] != want {
			continue
		}
		changed := false
		for j := range wc.Webhooks {
			if string(wc.Webhooks[j].ClientConfig.CABundle) != string(caPEM) {
				wc.Webhooks[j].ClientConfig.CABundle, changed = caPEM, true
			}
		}
		if changed {
			if err := r.Update(ctx, wc); err != nil {
				return err
			}
		}
	}
	var validating admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := r.List(ctx, &validating); err != nil {
		return err
	}
	for i := range validating.Items {
		wc := &validating.Items[i]
		if wc.Annotations[cmapi.WantInjectAnnotation] != want {
			continue
		}
		changed := false
		for j := range wc.Webhooks {
			if string(wc.Webhooks[j].ClientConfig.CABundle) != string(caPEM) {
				wc.Webhooks[j].ClientConfig.CABundle, changed = caPEM, true
			}
		}
		if changed {
			if err := r.Update(ctx, wc); err != nil {
				return err
			}
		}
	}
	return nil
}

// setCertReady sets the Ready condition and writes the status when it
// differs from what is stored.
func (r *standIn) setCertReady(ctx context.Context, cert *cmapi.Certificate, ready bool, reason, msg string) error {
	var stored cmapi.Certificate
	if err := r.Get(ctx, client.ObjectKeyFromObject(cert), &stored); err != nil {
		return err
	}
	status := cmmeta.ConditionFalse
	if ready {
		status = cmmeta.ConditionTrue
	}
	now := metav1.Now()
	cond := cmapi.CertificateCondition{Type: cmapi.CertificateConditionReady, Status: status, Reason: reason, Message: msg,
		LastTransitionTime: &now, ObservedGeneration: cert.Generation}
	var conds []cmapi.CertificateCondition
	for _, c := range cert.Status.Conditions {
		if c.Type == cmapi.CertificateConditionReady {
			if c.Status == status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			continue
		}
		conds = append(conds, c)
	}
	cert.Status.Conditions = append(conds, cond)
	if equality.Semantic.DeepEqual(stored.Status, cert.Status) {
		return nil
	}
	return r.Status().Update(ctx, cert)
}

func (r *standIn) setIssuerReady(ctx context.Context, issuer *cmapi.Issuer, ready bool, reason, msg string) error {
	status := cmmeta.ConditionFalse
	if ready {
		status = cmmeta.ConditionTrue
	}
	for _, c := range issuer.Status.Conditions {
		if c.Type == cmapi.IssuerConditionReady && c.Status == status && c.Reason == reason {
			return nil
		}
	}
	now := metav1.Now()
	issuer.Status.Conditions = []cmapi.IssuerCondition{{Type: cmapi.IssuerConditionReady, Status: status, Reason: reason, Message: msg,
		LastTransitionTime: &now, ObservedGeneration: issuer.Generation}}
	return r.Status().Update(ctx, issuer)
}
