package webhooks

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// SecretAccess answers whether a user may read a Secret. The BindTSIGKey
// webhook asks it for the user behind each request that imports a Secret:
// an imported key is copied into the keys Secret the BIND pods mount, so
// importing must need the right to read it (docs/behaviours.md, "Least
// privilege").
type SecretAccess interface {
	CanReadSecret(ctx context.Context, user authenticationv1.UserInfo, namespace, name string) (bool, error)
}

// SubjectAccessReviews asks the API server's authorizer with a
// SubjectAccessReview: the answer is the one RBAC (or whatever the cluster
// runs) would give that user for `get` on that Secret.
type SubjectAccessReviews struct {
	Client client.Client
}

// CanReadSecret implements SecretAccess.
func (s SubjectAccessReviews) CanReadSecret(ctx context.Context, user authenticationv1.UserInfo, namespace, name string) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: "secrets", Name: name},
	}}
	if err := s.Client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	return sar.Status.Allowed, nil
}

// requester is the user behind the admission request in ctx; false when
// ctx holds none (a call from outside the webhook server).
func requester(ctx context.Context) (authenticationv1.UserInfo, bool) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return authenticationv1.UserInfo{}, false
	}
	return req.UserInfo, true
}
