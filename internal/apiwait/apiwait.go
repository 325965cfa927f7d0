// Package apiwait waits until the Kubernetes API server is ready, for the
// start of a process that cannot begin without it.
package apiwait

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// Ready polls the API server's /readyz every second until it answers "ok",
// for at most limit.
//
// Why: controller-runtime builds the manager's cache from the API's
// discovery, so a manager that starts while the API server is down (a
// control-plane restart, which also costs the leader its lease) exits at
// once. The kubelet then restarts it with a growing back-off (10 s, 20 s,
// 40 s …) that outlasts the outage and keeps the webhooks down after the
// API server is back.
func Ready(ctx context.Context, cfg *rest.Config, limit time.Duration, log logr.Logger) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, time.Second, limit, true, func(ctx context.Context) (bool, error) {
		body, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) != "ok" {
			err = fmt.Errorf("/readyz answered %q", body)
		}
		if err != nil {
			if last == nil || last.Error() != err.Error() {
				log.Info("waiting for the API server", "error", err.Error())
			}
			last = err
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the API server at %s was not ready within %s: %w (last: %v)", cfg.Host, limit, err, last)
	}
	return nil
}
