package certs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Labels stamped on the Secret the Manager creates.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedByValue = "bind-operator"
	labelComponent = "app.kubernetes.io/component"
	componentValue = "webhook-certificate"
)

// Manager keeps the webhook serving certificate and CA bundle in place
// without cert-manager. Every replica runs it (it does not need leader
// election): each one must have the files in its own CertDir, and the
// Secret's resourceVersion arbitrates between replicas that rotate at once.
type Manager struct {
	c   client.WithWatch
	o   Options
	now func() time.Time
	log logr.Logger
}

var (
	_ manager.Runnable               = (*Manager)(nil)
	_ manager.LeaderElectionRunnable = (*Manager)(nil)
)

// errSecretChanged means another writer won a race; the next round re-reads
// and adopts what it wrote.
var errSecretChanged = errors.New("the Secret changed while it was being written")

// namedWatch is one object the Manager reacts to.
type namedWatch struct {
	newList   func() client.ObjectList
	namespace string
	name      string
}

// New returns a Manager. c must read from the API server, not from a cache:
// a cached client would need a cluster-wide Secret informer, and the Manager
// must work before the manager's caches start (see Bootstrap).
func New(c client.WithWatch, o Options) (*Manager, error) {
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("self-managed webhook certificates: %w", err)
	}
	return &Manager{c: c, o: o, now: time.Now, log: logf.Log.WithName("webhook-certs")}, nil
}

func (m *Manager) String() string {
	return fmt.Sprintf("self-managed webhook certificates in Secret %s/%s", m.o.Namespace, m.o.SecretName)
}

// NeedLeaderElection is false: followers serve webhooks too, so they need the
// files, and they must re-inject the bundle if the leader is gone.
func (m *Manager) NeedLeaderElection() bool { return false }

// Bootstrap makes sure the certificate files exist before the webhook server
// starts: controller-runtime's webhook server fails to start without them,
// and it starts before any other runnable. Call it before mgr.Start.
func (m *Manager) Bootstrap(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if _, err = m.Sync(ctx); err == nil {
			return nil
		}
		if !errors.Is(err, errSecretChanged) {
			return err
		}
	}
	return err
}

// Start keeps the certificates valid and injected until ctx ends. It acts on
// changes to the Secret and to the webhook configurations (someone resetting
// caBundle, a configuration applied late) and on the planned rotation time.
func (m *Manager) Start(ctx context.Context) error {
	trigger := make(chan struct{}, 1)
	watches := []namedWatch{{func() client.ObjectList { return &corev1.SecretList{} }, m.o.Namespace, m.o.SecretName}}
	for _, n := range m.o.MutatingWebhookConfigurations {
		watches = append(watches, namedWatch{func() client.ObjectList { return &admissionregistrationv1.MutatingWebhookConfigurationList{} }, "", n})
	}
	for _, n := range m.o.ValidatingWebhookConfigurations {
		watches = append(watches, namedWatch{func() client.ObjectList { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} }, "", n})
	}
	for _, w := range watches {
		go watchNamed(ctx, m.c, w.newList, w.namespace, w.name, trigger)
	}

	backoff := time.Second
	for {
		wait := m.o.ResyncInterval
		wake, err := m.Sync(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errSecretChanged):
			wait = 0
		case err != nil:
			m.log.Error(err, "webhook certificate sync failed; retrying", "in", backoff)
			wait, backoff = backoff, min(2*backoff, time.Minute)
		default:
			backoff = time.Second
			if d := wake.Sub(m.now()); d < wait {
				wait = max(d, 0)
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-trigger:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// Sync runs one round: read the Secret, rotate what is due, store it, write
// the files and inject the bundle. It returns when it next needs to run.
func (m *Manager) Sync(ctx context.Context) (time.Time, error) {
	now := m.now()
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: m.o.Namespace, Name: m.o.SecretName}
	exists := true
	if err := m.c.Get(ctx, key, secret); apierrors.IsNotFound(err) {
		exists = false
	} else if err != nil {
		return time.Time{}, fmt.Errorf("reading Secret %s: %w", key, err)
	}

	r, err := plan(parseState(secret.Data), m.o.policy(), now)
	if err != nil {
		return time.Time{}, err
	}
	data := secret.Data
	if r.changed {
		data = r.next.data()
		if err := m.store(ctx, secret, exists, data); err != nil {
			return time.Time{}, err
		}
		// Serial numbers and dates only: key material is never logged.
		m.log.Info("issued webhook certificates", "secret", key.String(), "reasons", r.reasons,
			"caSerial", r.next.signer.Cert.SerialNumber.Text(16), "caNotAfter", r.next.signer.Cert.NotAfter,
			"servingSerial", r.next.serving.Cert.SerialNumber.Text(16), "servingNotAfter", r.next.serving.Cert.NotAfter,
			"trustedCAs", len(r.next.trusted))
	}

	if changed, err := writeCertDir(m.o.CertDir, data); err != nil {
		return time.Time{}, err
	} else if changed {
		m.log.Info("wrote webhook certificate files", "dir", m.o.CertDir)
	}

	ir, err := inject(ctx, m.c, m.o.MutatingWebhookConfigurations, m.o.ValidatingWebhookConfigurations, data[KeyCACert])
	if len(ir.updated) > 0 {
		m.log.Info("injected the CA bundle", "into", ir.updated)
	}
	if len(ir.missing) > 0 {
		m.log.V(1).Info("webhook configurations not found yet", "names", ir.missing)
	}
	if apierrors.IsConflict(err) {
		return r.wake, fmt.Errorf("%w: %w", errSecretChanged, err)
	}
	return r.wake, err
}

// store creates or updates the Secret. Another replica may have written it
// between our read and our write; then the write fails (AlreadyExists or a
// stale resourceVersion) and the caller re-reads and adopts that replica's
// certificates instead of overwriting them.
func (m *Manager) store(ctx context.Context, secret *corev1.Secret, exists bool, data map[string][]byte) error {
	if !exists {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: m.o.Namespace,
				Name:      m.o.SecretName,
				Labels:    map[string]string{labelManagedBy: managedByValue, labelComponent: componentValue},
			},
			Type: corev1.SecretTypeTLS,
			Data: data,
		}
		err := m.c.Create(ctx, secret)
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%w: %w", errSecretChanged, err)
		}
		return err
	}
	secret = secret.DeepCopy()
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	// Keep keys someone else added; replace only ours.
	maps.Copy(secret.Data, data)
	err := m.c.Update(ctx, secret)
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%w: %w", errSecretChanged, err)
	}
	return err
}
