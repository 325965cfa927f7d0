package certmanager

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/e2e"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// Names install-cert-manager.yaml (config/default) produces.
const (
	servingCert    = "bind-operator-serving-cert"
	webhookService = "bind-operator-webhook-service"
	certDir        = "/tmp/k8s-webhook-server/serving-certs"
)

// TestCertManagerInstall: installed with `kubectl apply --server-side -f
// crds.yaml -f install-cert-manager.yaml` of the release after cert-manager, the operator runs with the Secret cert-manager issued
// for its serving Certificate mounted, serves exactly that certificate to
// the API server, which trusts it through the CA injected into both webhook
// configurations; the mutating webhook defaults a BindTSIGKey (and the
// controllers then generate its key), and the validating webhook refuses a
// bad object with the field path.
func TestCertManagerInstall(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := client.New(env.Cluster.Config(), client.Options{Scheme: Scheme()})
	testkit.Must(t, err)

	// The serving Certificate is Ready and its Secret is laid out as
	// cert-manager lays it out.
	var cert cmapi.Certificate
	testkit.Must(t, c.Get(ctx, client.ObjectKey{Namespace: e2e.OperatorNamespace, Name: servingCert}, &cert))
	g.Expect(cert.Status.Conditions).To(ContainElement(SatisfyAll(
		HaveField("Type", cmapi.CertificateConditionReady), HaveField("Status", cmmeta.ConditionTrue))), "Certificate %s Ready", servingCert)
	var secret corev1.Secret
	testkit.Must(t, c.Get(ctx, client.ObjectKey{Namespace: e2e.OperatorNamespace, Name: cert.Spec.SecretName}, &secret))
	g.Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(secret.Data).To(SatisfyAll(HaveKey(corev1.TLSCertKey), HaveKey(corev1.TLSPrivateKeyKey), HaveKey(cmmeta.TLSCAKey)))
	g.Expect(secret.Annotations).To(HaveKeyWithValue(cmapi.CertificateNameKey, servingCert))
	caPEM := secret.Data[cmmeta.TLSCAKey]
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(caPEM)).To(BeTrue(), "ca.crt holds a certificate")

	// The Deployment mounts that Secret as the webhook certificate folder,
	// and the running manager sees the issued files.
	var dep appsv1.Deployment
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: e2e.OperatorNamespace, Name: e2e.OperatorDeployment}, &dep))
	g.Expect(dep.Status.AvailableReplicas).To(BeNumerically(">=", 1))
	pods, err := env.OperatorPods(ctx)
	testkit.Must(t, err)
	g.Expect(pods).NotTo(BeEmpty())
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		g.Expect(mountedSecret(&pod, "manager", certDir)).To(Equal(cert.Spec.SecretName), "pod %s mounts the issued Secret at %s", pod.Name, certDir)
		var mounted []byte
		for _, pid := range localcluster.PodUIDPIDs(string(pod.UID)) {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "bind-operator" {
				mounted, err = os.ReadFile(filepath.Join(fmt.Sprintf("/proc/%d/root", pid), certDir, corev1.TLSCertKey))
				testkit.Must(t, err)
			}
		}
		g.Expect(mounted).To(Equal(secret.Data[corev1.TLSCertKey]), "pod %s: %s/tls.crt is the issued certificate", pod.Name, certDir)
	}

	// The webhook Service serves the issued certificate for its DNS name,
	// and it verifies against the CA.
	svcIP, err := env.Cluster.ServiceIP(ctx, e2e.OperatorNamespace, webhookService)
	testkit.Must(t, err)
	serverName := webhookService + "." + e2e.OperatorNamespace + ".svc"
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(svcIP, "443"),
		&tls.Config{ServerName: serverName, RootCAs: roots, MinVersion: tls.VersionTLS12})
	testkit.Must(t, err)
	served := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	issued, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	testkit.Must(t, err)
	g.Expect(served.Raw).To(Equal(issued.Certificate[0]), "the webhook server presents the cert-manager-issued certificate")
	t.Logf("webhook %s (%s) serves %q issued by %q, valid until %s", serverName, svcIP, served.DNSNames, served.Issuer.CommonName, served.NotAfter.Format(time.RFC3339))

	// The CA went into both webhook configurations (cainjector's job).
	var mutating admissionregistrationv1.MutatingWebhookConfigurationList
	var validating admissionregistrationv1.ValidatingWebhookConfigurationList
	testkit.Must(t, c.List(ctx, &mutating))
	testkit.Must(t, c.List(ctx, &validating))
	injected := 0
	for _, wc := range mutating.Items {
		if wc.Annotations[cmapi.WantInjectAnnotation] == e2e.OperatorNamespace+"/"+servingCert {
			for _, w := range wc.Webhooks {
				g.Expect(bytes.Equal(w.ClientConfig.CABundle, caPEM)).To(BeTrue(), "caBundle of %s in %s", w.Name, wc.Name)
				injected++
			}
		}
	}
	for _, wc := range validating.Items {
		if wc.Annotations[cmapi.WantInjectAnnotation] == e2e.OperatorNamespace+"/"+servingCert {
			for _, w := range wc.Webhooks {
				g.Expect(bytes.Equal(w.ClientConfig.CABundle, caPEM)).To(BeTrue(), "caBundle of %s in %s", w.Name, wc.Name)
				injected++
			}
		}
	}
	g.Expect(injected).To(BeNumerically(">", 0), "no webhook configuration asks for %s's CA", servingCert)

	// Admission through the cert-manager path: the mutating webhook
	// defaults, the controllers act, the validating webhook refuses.
	ns := "certmanager-e2e"
	testkit.Must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	key := &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "updates"}}
	testkit.Must(t, env.Client.Create(ctx, key))
	g.Expect(key.Spec.SecretName).To(Equal("updates"+v1.TSIGSecretNameSuffix), "spec.secretName defaulted by the mutating webhook")
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: key.Spec.SecretName}, &corev1.Secret{})
	}).WithContext(ctx).Should(Succeed(), "the operator generates the key's Secret")

	out, err := env.Kubectl(ctx, `apiVersion: bind.unkin.net/v1alpha1
kind: BindCluster
metadata: {name: sneaky, namespace: `+ns+`}
spec:
  extraOptions: ['also-notify { 198.18.0.42; };']
`, "apply", "-f", "-")
	g.Expect(err).To(HaveOccurred(), "a pod-IP option must be refused:\n%s", out)
	g.Expect(out).To(ContainSubstring("spec.extraOptions[0]"), "kubectl shows the field path")
	t.Logf("kubectl refused the broken object:\n%s", strings.TrimSpace(out))
	// kubectl prints only the causes; the API's status says who refused.
	err = env.Client.Create(ctx, &v1.BindCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sneaky"},
		Spec:       v1.BindClusterSpec{ExtraOptions: []string{"also-notify { 198.18.0.42; };"}},
	})
	g.Expect(err).To(MatchError(ContainSubstring(`admission webhook "vbindcluster.bind.unkin.net" denied the request`)))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "an Invalid status with causes: %v", err)
	var status apierrors.APIStatus
	g.Expect(errors.As(err, &status)).To(BeTrue())
	g.Expect(status.Status().Details.Causes).To(ContainElement(HaveField("Field", "spec.extraOptions[0]")))
}

// mountedSecret returns the Secret mounted at path in the container.
func mountedSecret(pod *corev1.Pod, container, path string) string {
	for _, c := range pod.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.MountPath != path {
				continue
			}
			for _, v := range pod.Spec.Volumes {
				if v.Name == m.Name && v.Secret != nil {
					return v.Secret.SecretName
				}
			}
		}
	}
	return ""
}
