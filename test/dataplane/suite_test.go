package dataplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"

	"git.unkin.net/unkin/bind-operator/batch"
	"git.unkin.net/unkin/bind-operator/controllers/catalogs"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/controllers/dnsrecords"
	"git.unkin.net/unkin/bind-operator/controllers/zones"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

var (
	k8s client.Client
	ctx = context.Background()
)

func TestMain(m *testing.M) {
	testkit.Main(m, testkit.Options{Requires: []string{"named"}}, func(s *testkit.Suite) error {
		k8s = s.Client
		suite = s
		// The waits here measure how fast a change travels (NOTIFY against
		// the 300 s refresh): look often.
		gomega.SetDefaultEventuallyPollingInterval(5 * time.Millisecond)
		var err error
		stopOperator, err = startOperator(s)
		return err
	})
}

var (
	suite *testkit.Suite
	// stopOperator stops the operator the suite runs (restartOperator).
	stopOperator func() error
)

// startOperator runs the controllers of the data plane, as the manager
// does, until the suite ends or the returned stop is called.
func startOperator(s *testkit.Suite) (stop func() error, err error) {
	// A restarted operator registers the same controller names again in
	// this process.
	opts := ctrl.Options{Controller: config.Controller{SkipNameValidation: ptr.To(true)}}
	return s.StartStoppableManager(opts, func(mgr ctrl.Manager) error {
		updates := batch.NewUpdates(0, 0)
		deleted := dnsrecords.NewDeletedRecords()
		servers := clusterpods.ClusterResolver{Client: mgr.GetClient(), Endpoints: eps}
		for _, r := range []interface{ SetupWithManager(ctrl.Manager) error }{
			&dnsrecords.DNSRecordReconciler{Client: mgr.GetClient(), Servers: servers, Updates: updates, Deleted: deleted},
			&zones.BindZoneReconciler{Client: mgr.GetClient(), Servers: servers, Endpoints: eps, Updates: updates, Deleted: deleted, ResyncPeriod: time.Minute},
			&catalogs.BindCatalogZoneReconciler{Client: mgr.GetClient(), Endpoints: eps, Period: 2 * time.Second},
		} {
			if err := r.SetupWithManager(mgr); err != nil {
				return err
			}
		}
		return nil
	})
}

// whileNoOperatorRuns stops the operator, runs fn, and starts a new one,
// as an upgrade, an eviction or a crash does.
func whileNoOperatorRuns(t *testing.T, fn func()) {
	t.Helper()
	testkit.Must(t, stopOperator())
	fn()
	var err error
	stopOperator, err = startOperator(suite)
	testkit.Must(t, err)
}

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
