package controllers

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// tsigKeyBytes is the material length per algorithm: the HMAC's output size,
// as RFC 2104 recommends and as tsig-keygen generates.
var tsigKeyBytes = map[bindv1alpha1.TSIGAlgorithm]int{
	"hmac-sha1":   20,
	"hmac-sha224": 28,
	"hmac-sha256": 32,
	"hmac-sha384": 48,
	"hmac-sha512": 64,
}

// generateTSIGSecret returns fresh base64 key material for the algorithm.
func generateTSIGSecret(alg bindv1alpha1.TSIGAlgorithm) (string, error) {
	n, ok := tsigKeyBytes[alg]
	if !ok {
		return "", fmt.Errorf("unsupported TSIG algorithm %q", alg)
	}
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf), nil
}

// checkTSIGSecret says why material is unusable, or nil. It never echoes
// the material itself.
func checkTSIGSecret(material []byte) error {
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

// tsigDefaults fills what the mutating webhook would, so the controller
// behaves the same on objects created before the webhook existed.
func tsigDefaults(k *bindv1alpha1.BindTSIGKey) (secretName, keyName string, alg bindv1alpha1.TSIGAlgorithm) {
	secretName, keyName, alg = k.Spec.SecretName, string(k.Spec.KeyName), k.Spec.Algorithm
	if secretName == "" {
		secretName = k.Name + "-tsig"
	}
	if keyName == "" {
		keyName = k.Name
	}
	if alg == "" {
		alg = "hmac-sha256"
	}
	return secretName, keyName, alg
}
