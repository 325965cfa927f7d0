package clusterpods

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// GenerateTSIGSecret returns fresh base64 key material for the algorithm,
// as long as the algorithm's output (TSIGAlgorithm.KeyBytes).
func GenerateTSIGSecret(alg bindv1alpha1.TSIGAlgorithm) (string, error) {
	n := alg.KeyBytes()
	if n == 0 {
		return "", fmt.Errorf("unsupported TSIG algorithm %q", alg)
	}
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf), nil
}

// CheckTSIGSecret says why material is unusable, or nil. It never echoes
// the material itself.
func CheckTSIGSecret(material []byte) error {
	if len(material) == 0 {
		return fmt.Errorf("it has no %q entry", bindv1alpha1.TSIGSecretKey)
	}
	raw, err := base64.StdEncoding.DecodeString(string(material))
	if err != nil {
		return fmt.Errorf("its %q entry is not base64", bindv1alpha1.TSIGSecretKey)
	}
	if len(raw) < 16 {
		return fmt.Errorf("its key is %d bytes long; use at least 16 random bytes", len(raw))
	}
	return nil
}

// TSIGDefaults are the Secret, key name and algorithm of a key: the
// stored ones, or the defaults the mutating webhook fills
// (BindTSIGKey.SetDefaults), so the controller behaves the same on objects
// stored without the webhook.
func TSIGDefaults(k *bindv1alpha1.BindTSIGKey) (secretName, keyName string, alg bindv1alpha1.TSIGAlgorithm) {
	d := bindv1alpha1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: k.Name}, Spec: k.Spec}
	d.SetDefaults()
	return d.Spec.SecretName, string(d.Spec.KeyName), d.Spec.Algorithm
}
