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
)

// certManagerVersion is the cert-manager module pinned in go.mod; its zip
// carries the CRDs cert-manager installs.
const certManagerVersion = "v1.21.2"

// certManagerCRDs reads the cert-manager.io CRDs (Issuer, Certificate, ...)
// from the module cache. The files are plain YAML today, but the Helm chart
// is built from them, so any line holding a template action is dropped
// first rather than tripping the YAML parser in a later release.
func certManagerCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	// go mod download fetches the zip on a fresh machine (nothing in the
	// build imports cert-manager, so no build would) and reports its folder.
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/cert-manager/cert-manager@"+certManagerVersion).Output()
	if err != nil {
		return nil, fmt.Errorf("go mod download github.com/cert-manager/cert-manager@%s: %w", certManagerVersion, err)
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
		for _, doc := range splitYAML(stripTemplates(raw)) {
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

// splitYAML splits a multi-document stream and drops empty documents.
func splitYAML(raw []byte) [][]byte {
	var docs [][]byte
	for _, d := range strings.Split("\n"+string(raw), "\n---") {
		if strings.TrimSpace(d) == "" {
			continue
		}
		docs = append(docs, []byte(d))
	}
	return docs
}
