package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"git.unkin.net/unkin/bind-operator/test/envtestutil"
)

// ApplySamples creates every object of config/samples in namespace, through
// the operator's admission webhooks, and returns them.
func (e *Env) ApplySamples(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(envtestutil.RepoRoot(), "config", "samples", "bind_*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no samples: %v", err)
	}
	var all []*unstructured.Unstructured
	for _, f := range files {
		objs, err := ReadObjects(f)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			o.SetNamespace(namespace)
			if err := e.Client.Create(ctx, o); err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", filepath.Base(f), o.GetKind(), o.GetName(), err)
			}
			all = append(all, o)
		}
	}
	return all, nil
}

// ReadObjects decodes every YAML document of a file.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}
