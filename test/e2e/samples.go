package e2e

import (
	"context"
	"path/filepath"
	"strings"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// SamplesDir is config/samples, the examples of every kind.
func SamplesDir() string { return filepath.Join(testkit.RepoRoot(), "config", "samples") }

// ApplySamples applies config/samples into namespace as a user does —
// `kubectl apply -k config/samples -n <namespace>`, through the operator's
// admission webhooks — and returns kubectl's lines (one per object).
func (e *Env) ApplySamples(ctx context.Context, namespace string) ([]string, error) {
	out, err := e.Kubectl(ctx, "", "apply", "-k", SamplesDir(), "-n", namespace)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}
