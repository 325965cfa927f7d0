package clusterpods

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
)

// KeySecretRefusedError says that a BindTSIGKey names a Secret whose
// material it has no right to: the Secret is not the key's own and the key
// does not import it. It names the key and the Secret, nothing else of the
// Secret (whoever reads the condition may not be allowed to read it).
type KeySecretRefusedError struct {
	Key, Secret string
}

func (e *KeySecretRefusedError) Error() string {
	return fmt.Sprintf("BindTSIGKey %q cannot be used: its Secret %q was not created for it by the operator, and the key does not import it; "+
		"choose a secretName that no other Secret has (the operator then generates the key), or have someone allowed to read that Secret recreate the BindTSIGKey with importExisting: true", e.Key, e.Secret)
}

// ImportedSecretMissingError is an imported key (importExisting) whose
// Secret does not exist or holds no material: only the user can fix it, so
// the cluster reports it (RenderFailed) instead of retrying in silence. A
// generated key's Secret is the operator's to create, and its absence is a
// moment to wait out.
type ImportedSecretMissingError struct {
	Key, Secret string
	// NoEntry: the Secret exists without the material's entry.
	NoEntry bool
}

func (e *ImportedSecretMissingError) Error() string {
	if e.NoEntry {
		return fmt.Sprintf("BindTSIGKey %q imports Secret %q, which has no %q entry; put the base64 key material there (as `tsig-keygen` prints it)", e.Key, e.Secret, bindv1alpha1.TSIGSecretKey)
	}
	return fmt.Sprintf("BindTSIGKey %q imports Secret %q, which does not exist; create it with the key material in its %q entry, or remove importExisting so that the operator generates a key", e.Key, e.Secret, bindv1alpha1.TSIGSecretKey)
}

// KeySecretUsable is the one place that decides whether the material in
// Secret s may be used for BindTSIGKey k: only when s is the key's own
// (the BindTSIGKey reconciler created it with a controller reference to
// the key's UID) or the key imports it (importExisting, which admission
// grants only to a requester allowed to get that Secret: the
// SubjectAccessReview in webhooks/bindtsigkey.go; importExisting and
// secretName are immutable, so that check holds for the key's life).
//
// Without it, anyone who may create a BindTSIGKey could name any Secret of
// the namespace (spec.secretName) and have its data copied into a
// cluster's keys Secret and the BIND pods, or sign UPDATEs with it. Every
// reader of key material (KeyMaterial) and the key's own reconciler ask
// here, before they look at the Secret's data.
func KeySecretUsable(k *bindv1alpha1.BindTSIGKey, s *corev1.Secret) error {
	if k.Spec.ImportExisting || metav1.IsControlledBy(s, k) {
		return nil
	}
	return &KeySecretRefusedError{Key: k.Name, Secret: s.Name}
}

// KeyMaterial reads a BindTSIGKey's Secret: the only reader of key
// material (the cluster's keys, a zone's clause, the operator's UPDATEs,
// catalogs), so the only place that must ask KeySecretUsable. A missing
// Secret is reported as a sentence: the BindTSIGKey controller may simply
// not have created it yet; a Secret the key has no right to as a
// *KeySecretRefusedError.
func KeyMaterial(ctx context.Context, c client.Reader, k *bindv1alpha1.BindTSIGKey) (render.TSIGKey, error) {
	secretName, keyName, algorithm := TSIGDefaults(k)
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: secretName}, &s); err != nil {
		if apierrors.IsNotFound(err) && k.Spec.ImportExisting {
			return render.TSIGKey{}, &ImportedSecretMissingError{Key: k.Name, Secret: secretName}
		}
		if apierrors.IsNotFound(err) {
			return render.TSIGKey{}, fmt.Errorf("the Secret %q of BindTSIGKey %q does not exist yet", secretName, k.Name)
		}
		return render.TSIGKey{}, err
	}
	if err := KeySecretUsable(k, &s); err != nil {
		return render.TSIGKey{}, err
	}
	material := string(s.Data[bindv1alpha1.TSIGSecretKey])
	if material == "" && k.Spec.ImportExisting {
		return render.TSIGKey{}, &ImportedSecretMissingError{Key: k.Name, Secret: secretName, NoEntry: true}
	}
	if material == "" {
		return render.TSIGKey{}, fmt.Errorf("the Secret %q of BindTSIGKey %q has no %q entry", secretName, k.Name, bindv1alpha1.TSIGSecretKey)
	}
	return render.TSIGKey{Name: keyName, Algorithm: string(algorithm), Secret: material}, nil
}
