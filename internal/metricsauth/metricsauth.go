// Package metricsauth guards the manager's metrics endpoint the way the API
// server guards its own: the caller's bearer token is authenticated with a
// TokenReview, and the caller must be allowed the request's verb on its
// path (a SubjectAccessReview for a non-resource URL), which is what the
// metrics-reader ClusterRole grants on /metrics.
//
// controller-runtime's filters.WithAuthenticationAndAuthorization does the
// same through k8s.io/apiserver's delegating authenticator and authorizer.
// Those factories link gRPC, OpenTelemetry's exporter and the konnectivity
// client into the binary: 16 MiB of its 57 MiB, and, because every linked
// package's init runs at start, 12 MiB of resident memory before the
// manager does anything (docs/behaviours.md, "Scale"). Two reviews and a
// small cache are all the endpoint needs.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const (
	// allowedTTL and refusedTTL are how long a decision is reused. A
	// scraper comes back every 15-60 s with the same token, so it costs
	// the API server two reviews a minute; a token that is revoked, or a
	// binding that is removed, stops working within a minute.
	allowedTTL = time.Minute
	refusedTTL = 10 * time.Second
	// cacheSize bounds the decisions kept: a caller sending random tokens
	// evicts old entries, it does not grow the manager.
	cacheSize = 256
	// reviewTimeout bounds both reviews of one request.
	reviewTimeout = 10 * time.Second
)

// decision is the answer for one token, verb and path.
type decision struct {
	status int    // http.StatusOK, StatusUnauthorized or StatusForbidden
	user   string // the authenticated user, for the 403 message
}

// Filter is a metricsserver.FilterProvider (ctrl.Options.Metrics).
func Filter(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	g := &guard{tokens: authn.TokenReviews(), access: authz.SubjectAccessReviews(), decisions: cache.NewLRUExpireCache(cacheSize)}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, err := g.decide(r)
			switch {
			case err != nil:
				// The reviews failed (the API server is away): neither
				// allowed nor refused, and not remembered.
				log.Error(err, "Metrics request not authorised")
				http.Error(w, "the API server could not review the request", http.StatusInternalServerError)
			case d.status == http.StatusUnauthorized:
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
			case d.status == http.StatusForbidden:
				log.V(1).Info("Metrics request refused", "user", d.user, "verb", verb(r), "path", r.URL.Path)
				http.Error(w, fmt.Sprintf("user %q may not %s %s", d.user, verb(r), r.URL.Path), http.StatusForbidden)
			default:
				next.ServeHTTP(w, r)
			}
		}), nil
	}, nil
}

type guard struct {
	tokens    authnclient.TokenReviewInterface
	access    authzclient.SubjectAccessReviewInterface
	decisions *cache.LRUExpireCache
}

// verb is the API server's verb for a non-resource request.
func verb(r *http.Request) string { return strings.ToLower(r.Method) }

func (g *guard) decide(r *http.Request) (decision, error) {
	token, ok := bearer(r)
	if !ok {
		return decision{status: http.StatusUnauthorized}, nil
	}
	// The cache key holds a digest of the token, never the token itself.
	key := fmt.Sprintf("%x %s %s", sha256.Sum256([]byte(token)), verb(r), r.URL.Path)
	if d, ok := g.decisions.Get(key); ok {
		return d.(decision), nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
	defer cancel()
	d, err := g.review(ctx, token, verb(r), r.URL.Path)
	if err != nil {
		return decision{}, err
	}
	ttl := refusedTTL
	if d.status == http.StatusOK {
		ttl = allowedTTL
	}
	g.decisions.Add(key, d, ttl)
	return d, nil
}

// review asks the API server who holds the token and whether they may.
func (g *guard) review(ctx context.Context, token, verb, path string) (decision, error) {
	tr, err := g.tokens.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		return decision{status: http.StatusUnauthorized}, nil
	}
	u := tr.Status.User
	extra := make(map[string]authzv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar, err := g.access.Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Verb: verb, Path: path},
	}}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return decision{status: http.StatusForbidden, user: u.Username}, nil
	}
	return decision{status: http.StatusOK, user: u.Username}, nil
}

// bearer is the request's bearer token, if it has one.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
