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
	})
}
