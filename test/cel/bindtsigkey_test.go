package cel

import (
	"testing"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func baseKey() *v1.BindTSIGKey {
	return &v1.BindTSIGKey{Spec: v1.BindTSIGKeySpec{Algorithm: "hmac-sha256", SecretName: "k-tsig", KeyName: "k.example"}}
}

func TestBindTSIGKeyCreate(t *testing.T) {
	runCreateCases(t, baseKey, []createCase[*v1.BindTSIGKey]{
		{desc: "valid"},
		{desc: "empty spec", mutate: func(k *v1.BindTSIGKey) { k.Spec = v1.BindTSIGKeySpec{} }},
		{desc: "valid import", mutate: func(k *v1.BindTSIGKey) { k.Spec.ImportExisting = true }},
		{desc: "valid template", mutate: func(k *v1.BindTSIGKey) {
			k.Spec.SecretTemplate = &v1.SecretTemplate{Annotations: map[string]string{"reflector.v1.k8s.emberstack.com/reflection-allowed": "true"}}
		}},
		{desc: "md5 is not offered", mutate: func(k *v1.BindTSIGKey) { k.Spec.Algorithm = "hmac-md5" },
			wantErrors: []string{"spec.algorithm", `Unsupported value: "hmac-md5"`}},
		{desc: "import without a secret name", mutate: func(k *v1.BindTSIGKey) { k.Spec.ImportExisting = true; k.Spec.SecretName = "" },
			wantErrors: []string{"importExisting needs secretName"}},
		{desc: "import with a template", mutate: func(k *v1.BindTSIGKey) {
			k.Spec.ImportExisting = true
			k.Spec.SecretTemplate = &v1.SecretTemplate{Labels: map[string]string{"a": "b"}}
		}, wantErrors: []string{"secretTemplate cannot be used with importExisting"}},
		{desc: "template sets the managed-by label", mutate: func(k *v1.BindTSIGKey) {
			k.Spec.SecretTemplate = &v1.SecretTemplate{Labels: map[string]string{"app.kubernetes.io/managed-by": "me"}}
		}, wantErrors: []string{"spec.secretTemplate.labels", "the label app.kubernetes.io/managed-by is reserved for the operator"}},
		{desc: "secret name with upper case", mutate: func(k *v1.BindTSIGKey) { k.Spec.SecretName = "Key" },
			wantErrors: []string{"spec.secretName", "should match"}},
		{desc: "key name with a quote", mutate: func(k *v1.BindTSIGKey) { k.Spec.KeyName = `k"; };` },
			wantErrors: []string{"spec.keyName", "should match"}},
		// Rules that were the validating webhook's until they moved here.
		{desc: "key named like the root", mutate: func(k *v1.BindTSIGKey) { k.Spec.KeyName = "." },
			wantErrors: []string{"spec.keyName", "a key needs a name such as transfer-key or update.example.com"}},
		{desc: "key name longer than 253 characters", mutate: func(k *v1.BindTSIGKey) { k.Spec.KeyName = longName(254) },
			wantErrors: []string{"spec.keyName", "a domain name has at most 253 characters"}},
	})
}

func TestBindTSIGKeyUpdate(t *testing.T) {
	runUpdateCases(t, baseKey, []updateCase[*v1.BindTSIGKey]{
		{desc: "template may change", mutate: func(k *v1.BindTSIGKey) {
			k.Spec.SecretTemplate = &v1.SecretTemplate{Labels: map[string]string{"team": "dns"}}
		}},
		{desc: "algorithm is immutable", mutate: func(k *v1.BindTSIGKey) { k.Spec.Algorithm = "hmac-sha512" },
			wantErrors: []string{"spec.algorithm", "algorithm is immutable"}},
		{desc: "keyName is immutable", mutate: func(k *v1.BindTSIGKey) { k.Spec.KeyName = "other" },
			wantErrors: []string{"spec.keyName", "keyName is immutable: clients sign with it"}},
		{desc: "secretName is immutable", mutate: func(k *v1.BindTSIGKey) { k.Spec.SecretName = "other" },
			wantErrors: []string{"spec.secretName", "secretName is immutable"}},
		// importExisting's rule moved here from the validating webhook.
		{desc: "importExisting cannot be switched on", mutate: func(k *v1.BindTSIGKey) { k.Spec.ImportExisting = true },
			wantErrors: []string{"spec.importExisting", "importExisting is immutable: switching it would start or stop managing a Secret the operator did not create"}},
	})
}

func TestBindTSIGKeyImportedUpdate(t *testing.T) {
	imported := func() *v1.BindTSIGKey {
		k := baseKey()
		k.Spec.ImportExisting = true
		return k
	}
	runUpdateCases(t, imported, []updateCase[*v1.BindTSIGKey]{
		{desc: "an imported key may stay imported", mutate: func(k *v1.BindTSIGKey) { k.Labels = map[string]string{"team": "dns"} }},
		{desc: "importExisting cannot be switched off", mutate: func(k *v1.BindTSIGKey) { k.Spec.ImportExisting = false },
			wantErrors: []string{"spec.importExisting", "importExisting is immutable"}},
	})
}
