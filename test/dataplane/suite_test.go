package dataplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	"github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/controllers"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

var (
	k8s client.Client
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	testkit.Main(m, testkit.Options{Requires: []string{"named"}}, func(s *testkit.Suite) error {
		k8s = s.Client
		// The waits here measure how fast a change travels (NOTIFY against
		// the 300 s refresh): look often.
		gomega.SetDefaultEventuallyPollingInterval(5 * time.Millisecond)
		return s.StartManager(ctrl.Options{}, func(mgr ctrl.Manager) error {
			updates := batch.NewUpdates(0, 0)
			servers := controllers.ClusterResolver{Client: mgr.GetClient(), Endpoints: eps}
			for _, r := range []interface{ SetupWithManager(ctrl.Manager) error }{
				&controllers.DNSRecordReconciler{Client: mgr.GetClient(), Servers: servers, Updates: updates},
				&controllers.BindZoneReconciler{Client: mgr.GetClient(), Servers: servers, Endpoints: eps, Updates: updates, ResyncPeriod: time.Minute},
				&controllers.BindCatalogZoneReconciler{Client: mgr.GetClient(), Endpoints: eps, Period: 2 * time.Second},
			} {
				if err := r.SetupWithManager(mgr); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
