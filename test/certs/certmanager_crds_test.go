package certs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// certManagerCRDs reads the cert-manager.io CRDs (Issuer, Certificate, ...)
// from the zip of the cert-manager module in go.mod, the one whose Go types
// the tests use. The files are plain YAML today, but the Helm chart is
// built from them, so any line holding a template action is dropped first
// rather than tripping the YAML parser in a later release.
func certManagerCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	// Without a version, go mod download takes go.mod's and reports the
	// module's folder (fetching it first on a fresh machine).
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/cert-manager/cert-manager").Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download github.com/cert-manager/cert-manager: %w", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download printed no module folder: %v", err)
	}
	dir := filepath.Join(mod.Dir, "deploy", "crds")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no cert-manager CRDs in %s: %v", dir, err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, doc := range testkit.SplitYAML(stripTemplates(raw)) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(doc, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if crd.Kind != "CustomResourceDefinition" {
				continue
			}
			crds = append(crds, crd)
		}
	}
	return crds, nil
}

func stripTemplates(raw []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		if strings.Contains(line, "{{") {
			continue
		}
		b.WriteString(line)
	}
	return b.Bytes()
}
