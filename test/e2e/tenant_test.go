package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestTenantCannotBorrowASecretsMaterial (issue 44 item 1): a tenant who
// may write this API in a namespace but not read its Secrets names another
// Secret of the namespace as a key's secretName (not an import) and uses
// the key as a cluster's transfer key and a zone's update key. The
// material never reaches the cluster: no Secret the operator writes holds
// it, no BIND pod starts, the key says SecretNotManaged and the cluster
// says why in ConfigValid. Importing the Secret is refused to the tenant
// at spec.secretName, and works for a user who may read it.
func TestTenantCannotBorrowASecretsMaterial(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	g := NewWithT(t)
	ns := newNamespace(ctx, t, "e2e-tenant-keys")
	material := make([]byte, 32)
	_, _ = rand.Read(material)
	victim := base64.StdEncoding.EncodeToString(material)
	testkit.Must(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "victim"},
		Data:       map[string][]byte{v1.TSIGSecretKey: []byte(victim)},
	}))
	tenant := tenantClient(ctx, t, ns, "mallory")

	testkit.Must(t, tenant.Create(ctx, &v1.BindTSIGKey{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stolen"},
		Spec:       v1.BindTSIGKeySpec{SecretName: "victim"},
	}))
	testkit.Must(t, tenant.Create(ctx, &v1.BindCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "borrower"},
		Spec: v1.BindClusterSpec{Mode: v1.ModeAuthoritative, Replicas: ptr.To[int32](1),
			TransferKeyRef: &v1.LocalObjectReference{Name: "stolen"}, Storage: &v1.StorageSpec{Enabled: ptr.To(false)}},
	}))
	g.Eventually(func(g Gomega) {
		var k v1.BindTSIGKey
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "stolen"}, &k)).To(Succeed())
		c := meta.FindStatusCondition(k.Status.Conditions, v1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1.ReasonSecretConflict))
		var bc v1.BindCluster
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "borrower"}, &bc)).To(Succeed())
		cv := meta.FindStatusCondition(bc.Status.Conditions, v1.ConditionConfigValid)
		g.Expect(cv).NotTo(BeNil())
		g.Expect(cv.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cv.Message).To(ContainSubstring(`"stolen"`))
		t.Logf("BindCluster borrower: ConfigValid=%s %s: %s", cv.Status, cv.Reason, cv.Message)
	}).WithContext(ctx).WithTimeout(2*time.Minute).Should(Succeed(), "the key and the cluster say the Secret is not theirs")

	// Hold a little: nothing the operator writes may carry the material,
	// and no BIND pod of the cluster may start with it.
	g.Consistently(func(g Gomega) {
		var secrets corev1.SecretList
		g.Expect(env.Client.List(ctx, &secrets, client.InNamespace(ns))).To(Succeed())
		for _, s := range secrets.Items {
			if s.Name == "victim" {
				continue
			}
			for k, v := range s.Data {
				g.Expect(bytes.Contains(v, []byte(victim))).To(BeFalse(), "Secret %s entry %s holds the victim's material", s.Name, k)
			}
		}
		var sts appsv1.StatefulSet
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "borrower"}, &sts)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a StatefulSet runs with the borrowed key: %v", err)
	}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())

	// Importing is refused to the tenant, at the field, without saying
	// whether the Secret exists.
	err := tenant.Create(ctx, &v1.BindTSIGKey{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "imported"},
		Spec:       v1.BindTSIGKeySpec{SecretName: "victim", ImportExisting: true},
	})
	g.Expect(err).To(HaveOccurred(), "the tenant imported a Secret it may not read")
	g.Expect(err.Error()).To(ContainSubstring("spec.secretName"))
	t.Logf("the tenant's import: %v", err)
	// A user who may read it imports it, once the tenant's key no longer
	// names it (each Secret serves one key).
	testkit.Must(t, tenant.Delete(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stolen"}}))
	g.Eventually(func() error {
		return env.Client.Create(ctx, &v1.BindTSIGKey{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "imported"},
			Spec:       v1.BindTSIGKeySpec{SecretName: "victim", ImportExisting: true},
		})
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "the admin imports the Secret")
	g.Eventually(func() (bool, error) {
		var k v1.BindTSIGKey
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "imported"}, &k)
		return meta.IsStatusConditionTrue(k.Status.Conditions, v1.ConditionReady), err
	}).WithContext(ctx).Should(BeTrue(), "the admin's import is Ready")
}

// TestParentZoneKeyCannotWriteChildZone (issue 44 item 2): zone
// tenants.e2e.example takes UPDATEs signed with key A, its child zone
// team.tenants.e2e.example with key B, which a DNSRecord api CNAME also
// lives in. The real nsupdate, through the query Service: key A is refused
// in the child zone (deleting the owned CNAME, adding a name, and adding a
// child's name through the parent zone), while key A in its own zone and
// key B in the child zone (outside the operator's record sets) work. The
// CNAME stays served and the refused name never is, on every pod.
func TestParentZoneKeyCannotWriteChildZone(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("nsupdate"); err != nil {
		t.Fatalf("nsupdate is missing (Debian package bind9-dnsutils): run make deps")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-zone-keys")
	a := authoritative{Namespace: ns, Name: "keys", Replicas: 2, Catalog: "catalog.keys.internal"}
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	for _, k := range []string{"parent-key", "team-key"} {
		testkit.Must(t, env.Client.Create(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: k}, Spec: v1.BindTSIGKeySpec{Algorithm: "hmac-sha256"}}))
	}
	a.create(ctx, t)
	const parent, child = "tenants.e2e.example", "team.tenants.e2e.example"
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("parent", parent, "parent-key")))
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("team", child, "team-key")))
	testkit.Must(t, env.Client.Create(ctx, &v1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: "team"}, Name: "api", Type: "CNAME",
			TTL: ptr.To[v1.TTL](60), Values: []string{"www.example.net."}},
	}))
	ips := a.servedByAll(ctx, t, a.Catalog, parent, child)
	queryIP, err := env.Cluster.ServiceIP(ctx, ns, a.Name)
	testkit.Must(t, err)
	cname := func(ip string) error {
		in, err := localcluster.Dig(ip, "api."+child+".", dns.TypeCNAME)
		if err != nil {
			return err
		}
		if len(in.Answer) != 1 {
			return fmt.Errorf("rcode %s, %d answers", dns.RcodeToString[in.Rcode], len(in.Answer))
		}
		return nil
	}
	for _, ip := range ips {
		NewWithT(t).Eventually(cname).WithArguments(ip).WithContext(ctx).Should(Succeed(), "the DNSRecord's CNAME is served at %s", ip)
	}

	keyA, keyB := readTSIGKey(ctx, t, ns, "parent-key"), readTSIGKey(ctx, t, ns, "team-key")
	for _, c := range []struct {
		key          tsigKey
		zone, update string
		refused      bool
	}{
		{keyA, child, "update delete api." + child + ". CNAME", true},
		{keyA, child, "update add evil." + child + ". 60 A 198.18.0.66", true},
		{keyA, parent, "update add evil." + child + ". 60 A 198.18.0.66", true},
		{keyA, parent, "update add ok." + parent + ". 60 A 198.18.0.1", false},
		{keyB, child, "update add ok." + child + ". 60 A 198.18.0.2", false},
		{keyB, child, "update delete api." + child + ". CNAME", true}, // the operator's record set
		{keyB, parent, "update add x." + parent + ". 60 A 198.18.0.3", true},
	} {
		out, err := nsupdate(ctx, t, c.key, queryIP, c.zone, c.update)
		what := fmt.Sprintf("key %s, zone %s: %s", strings.TrimSuffix(c.key.Name, "."), c.zone, c.update)
		switch {
		case c.refused && (err == nil || !strings.Contains(out, "REFUSED")):
			t.Errorf("%s: want REFUSED, nsupdate said (%v):\n%s", what, err, out)
		case !c.refused && err != nil:
			t.Errorf("%s: want success, nsupdate said (%v):\n%s", what, err, out)
		default:
			t.Logf("%s: %s", what, map[bool]string{true: "REFUSED", false: "NOERROR"}[c.refused])
		}
	}
	// Nothing refused reached a pod; what was allowed did.
	for i, ip := range ips {
		who := fmt.Sprintf("%s-%d", a.Name, i)
		testkit.Must(t, cname(ip))
		waitA(ctx, t, ip, "ok."+child+".", "198.18.0.2", who)
		waitA(ctx, t, ip, "ok."+parent+".", "198.18.0.1", who)
		in, err := localcluster.Dig(ip, "evil."+child+".", dns.TypeA)
		testkit.Must(t, err)
		if len(in.Answer) != 0 {
			t.Errorf("%s serves the refused evil.%s: %v", who, child, in.Answer)
		}
	}
}

// tenantClient is a user who may do anything with this API in ns and
// nothing else: no Secrets.
func tenantClient(ctx context.Context, t *testing.T, ns, user string) client.Client {
	t.Helper()
	testkit.Must(t, env.Client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bind-tenant"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}))
	testkit.Must(t, env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bind-tenant"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "bind-tenant"},
	}))
	cfg := env.Cluster.Config()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: testkit.Scheme()})
	testkit.Must(t, err)
	return c
}

// nsupdate sends one UPDATE with BIND's own nsupdate, over TCP, signed with
// key (from a key file, so the material is not on a command line).
func nsupdate(ctx context.Context, t *testing.T, key tsigKey, server, zone, update string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.conf")
	conf := fmt.Sprintf("key %q {\n\talgorithm %s;\n\tsecret %q;\n};\n", strings.TrimSuffix(key.Name, "."), strings.TrimSuffix(key.Algorithm, "."), key.Secret)
	testkit.Must(t, os.WriteFile(keyFile, []byte(conf), 0o600))
	script := fmt.Sprintf("server %s 53\nzone %s\n%s\nsend\n", server, zone, update)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsupdate", "-v", "-t", "10", "-k", keyFile)
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
