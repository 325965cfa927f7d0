package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"git.unkin.net/unkin/bind-operator/pki"
)

// identity is a client of the API server: a user name and its groups, as
// the client certificate's CN and O carry them.
type identity struct {
	file   string // kubeconfig file name in the work folder
	user   string
	groups []string
}

// The components' identities. The kubelet and kube-proxy use the names the
// API server's bootstrap RBAC and the Node authorizer know; the controller
// manager and scheduler run as cluster admins (they start every controller
// without per-controller service accounts, which keeps start-up short).
var (
	adminID     = identity{"admin.kubeconfig", "localcluster-admin", []string{"system:masters"}}
	kubeletID   = identity{"kubelet.kubeconfig", "system:node:" + NodeName, []string{"system:nodes"}}
	proxyID     = identity{"kube-proxy.kubeconfig", "system:kube-proxy", nil}
	kcmID       = identity{"kcm.kubeconfig", "system:kube-controller-manager", []string{"system:masters"}}
	schedulerID = identity{"scheduler.kubeconfig", "system:kube-scheduler", []string{"system:masters"}}
)

// writePKI makes the cluster CA, the API server's serving and
// kubelet-client certificates, the service-account signing key and one
// kubeconfig per identity, all in <workdir>/pki and <workdir>.
func (c *Cluster) writePKI() error {
	dir := c.opts.path("pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	now := time.Now()
	const validity = 30 * 24 * time.Hour
	ca, err := pki.NewCA(pkix.Name{CommonName: "bind-localcluster-ca"}, now, validity)
	if err != nil {
		return err
	}
	c.caPEM = ca.CertPEM
	write := func(name string, kp *pki.KeyPair) error {
		if err := os.WriteFile(c.opts.path("pki", name+".crt"), kp.CertPEM, 0o644); err != nil {
			return err
		}
		return os.WriteFile(c.opts.path("pki", name+".key"), kp.KeyPEM, 0o600)
	}
	if err := write("ca", ca); err != nil {
		return err
	}
	serving, err := ca.Issue(pki.Leaf{
		Subject: pkix.Name{CommonName: "kube-apiserver"},
		DNSNames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local", "localhost"},
		IPAddresses: []net.IP{net.ParseIP(NodeIP.String()), net.ParseIP(APIServerServiceIP.String()), net.ParseIP("127.0.0.1")},
		Usage:       x509.ExtKeyUsageServerAuth,
	}, now, validity)
	if err != nil {
		return err
	}
	if err := write("apiserver", serving); err != nil {
		return err
	}
	client := func(id identity) (*pki.KeyPair, error) {
		return ca.Issue(pki.Leaf{Subject: pkix.Name{CommonName: id.user, Organization: id.groups}, Usage: x509.ExtKeyUsageClientAuth}, now, validity)
	}
	// The API server calls kubelets (logs, exec) as this client.
	kubeletClient, err := client(identity{user: "kube-apiserver-kubelet-client", groups: []string{"system:masters"}})
	if err != nil {
		return err
	}
	if err := write("apiserver-kubelet-client", kubeletClient); err != nil {
		return err
	}
	// Service-account tokens are signed with a key of their own.
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.opts.path("pki", "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saDER}), 0o600); err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.opts.path("pki", "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return err
	}
	for _, id := range []identity{adminID, kubeletID, proxyID, kcmID, schedulerID} {
		kp, err := client(id)
		if err != nil {
			return err
		}
		if err := c.writeKubeconfig(id.file, kp); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) writeKubeconfig(file string, kp *pki.KeyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.serverURL(), CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user"}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, c.opts.path(file))
}

func (c *Cluster) serverURL() string { return "https://" + net.JoinHostPort(NodeIP.String(), "6443") }
