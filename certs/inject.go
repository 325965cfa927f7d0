package certs

import (
	"bytes"
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// injectResult names configurations that were updated or are still missing.
type injectResult struct {
	updated, missing []string
}

// inject sets clientConfig.caBundle on every webhook of the named
// configurations. A configuration that does not exist yet is not an error:
// it may be applied after the manager starts, and the watch brings the
// Manager back when it appears.
func inject(ctx context.Context, c client.Client, mutating, validating []string, bundle []byte) (injectResult, error) {
	var r injectResult
	for _, name := range mutating {
		obj := &admissionregistrationv1.MutatingWebhookConfiguration{}
		changed, err := injectOne(ctx, c, name, obj, func() bool {
			changed := false
			for i := range obj.Webhooks {
				changed = setBundle(&obj.Webhooks[i].ClientConfig, bundle) || changed
			}
			return changed
		})
		if err := r.record("mutating", name, changed, err); err != nil {
			return r, err
		}
	}
	for _, name := range validating {
		obj := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		changed, err := injectOne(ctx, c, name, obj, func() bool {
			changed := false
			for i := range obj.Webhooks {
				changed = setBundle(&obj.Webhooks[i].ClientConfig, bundle) || changed
			}
			return changed
		})
		if err := r.record("validating", name, changed, err); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (r *injectResult) record(kind, name string, changed bool, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		r.missing = append(r.missing, kind+"/"+name)
	case err != nil:
		return fmt.Errorf("injecting the CA bundle into %s webhook configuration %s: %w", kind, name, err)
	case changed:
		r.updated = append(r.updated, kind+"/"+name)
	}
	return nil
}

// injectOne reads, mutates and updates one object. Update carries the
// resourceVersion that was read, so a concurrent writer yields a Conflict and
// the Manager retries instead of overwriting it.
func injectOne(ctx context.Context, c client.Client, name string, obj client.Object, mutate func() bool) (bool, error) {
	if err := c.Get(ctx, types.NamespacedName{Name: name}, obj); err != nil {
		return false, err
	}
	if !mutate() {
		return false, nil
	}
	return true, c.Update(ctx, obj)
}

func setBundle(cc *admissionregistrationv1.WebhookClientConfig, bundle []byte) bool {
	if bytes.Equal(cc.CABundle, bundle) {
		return false
	}
	cc.CABundle = bytes.Clone(bundle)
	return true
}
