package clusterpods

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// The default SOA MNAME is the query Service's name in the cluster's DNS
// domain, which the manager is told (--cluster-domain), not assumed.
func TestQuerySvcFQDN(t *testing.T) {
	g := NewWithT(t)
	c := &bindv1alpha1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "infra"}}
	g.Expect(QuerySvcFQDN(c, "")).To(Equal("dns.infra.svc.cluster.local."))
	g.Expect(QuerySvcFQDN(c, "k8s.corp.example")).To(Equal("dns.infra.svc.k8s.corp.example."))
}
