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
	if err := injectKind(ctx, c, &r, "mutating", mutating, bundle, mutatingClientConfigs); err != nil {
		return r, err
	}
	return r, injectKind(ctx, c, &r, "validating", validating, bundle, validatingClientConfigs)
}

// injectKind is inject for the named configurations of one kind (P);
// clientConfigs points at the clientConfig of each of its webhooks.
func injectKind[T any, P interface {
	*T
	client.Object
}](ctx context.Context, c client.Client, r *injectResult, kind string, names []string, bundle []byte, clientConfigs func(P) []*admissionregistrationv1.WebhookClientConfig) error {
	for _, name := range names {
		obj := P(new(T))
		changed, err := injectOne(ctx, c, name, obj, func() bool {
			changed := false
			for _, cc := range clientConfigs(obj) {
				changed = setBundle(cc, bundle) || changed
			}
			return changed
		})
		if err := r.record(kind, name, changed, err); err != nil {
			return err
		}
	}
	return nil
}

// mutatingClientConfigs and validatingClientConfigs are the one part the
// two kinds cannot share: each holds its own webhook type, and the
// clientConfig field is all those types have in common.
func mutatingClientConfigs(o *admissionregistrationv1.MutatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
	ccs := make([]*admissionregistrationv1.WebhookClientConfig, len(o.Webhooks))
	for i := range o.Webhooks {
		ccs[i] = &o.Webhooks[i].ClientConfig
	}
	return ccs
}

func validatingClientConfigs(o *admissionregistrationv1.ValidatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
	ccs := make([]*admissionregistrationv1.WebhookClientConfig, len(o.Webhooks))
	for i := range o.Webhooks {
		ccs[i] = &o.Webhooks[i].ClientConfig
	}
	return ccs
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
