package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestBrokenExtraOptionsNeverReachPods (issue 6 g): a broken extraOptions
// never reaches the pods. Through a real kubectl, each kind of broken
// statement is refused at apply with the field path of the item and a
// sentence saying why (docs/validation.md): an attempt to escape the
// options block (grammar), a statement that is not on the allowlist, and an
// allowed statement whose argument BIND refuses (the webhook's
// named-checkconf on the candidate render, in named's words). Meanwhile
// nothing moves: the BindCluster keeps its generation, ConfigValid stays
// True, and the ConfigMap, the StatefulSet's generation and hash and the
// pods stay as they were; re-applying the valid manifest rolls nothing.
// (A render that named-checkconf rejects after admission — ConfigValid
// False with a Warning event — cannot be produced through the webhooks
// any more; test/controllers covers it.)
func TestBrokenExtraOptionsNeverReachPods(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-options")
	const name = "opts"
	manifest := func(extra string) string {
		return fmt.Sprintf(`apiVersion: bind.unkin.net/v1alpha1
kind: BindCluster
metadata: {name: %s, namespace: %s}
spec:
  mode: Authoritative
  replicas: 2
  storage: {enabled: false}
  extraOptions: [%s]
`, name, ns, extra)
	}
	const valid = `'minimal-responses yes;'`
	out, err := env.Kubectl(ctx, manifest(valid), "apply", "-f", "-")
	testkit.Must(t, err)
	t.Cleanup(func() { dumpOnFailure(t, ns, name, 2) })
	waitClusterReady(ctx, t, ns, name, 2)
	before, _, err := currentRollout(ctx, ns, name)
	testkit.Must(t, err)
	pods, err := podStates(ctx, ns, name)
	testkit.Must(t, err)
	var cm corev1.ConfigMap
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-config"}, &cm))
	var bc v1.BindCluster
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &bc))
	generation := bc.Generation
	t.Logf("%s; ready: StatefulSet generation %d, hash %s, pods %s", strings.TrimSpace(out), before.Generation, shortHash(before.Hash), describePods(pods))

	for _, bad := range []struct{ what, extra, field, says string }{
		{"block escape", `'minimal-responses yes; }; zone "evil" { type primary; file "/etc/shadow"; }; options { recursion yes;'`, "spec.extraOptions[0]", "statement"},
		{"statement not on the allowlist", valid + `, 'no-such-option yes;'`, "spec.extraOptions[1]", "not on the allowlist"},
		{"argument named refuses", valid + `, 'max-cache-size lots;'`, "spec.extraOptions[1]", "named-checkconf"},
		{"boolean named refuses", `'minimal-responses maybe;'`, "spec.extraOptions[0]", "boolean expected"},
	} {
		out, err := env.Kubectl(ctx, manifest(bad.extra), "apply", "-f", "-")
		g.Expect(err).To(HaveOccurred(), "%s: kubectl apply of [%s] was admitted:\n%s", bad.what, bad.extra, out)
		g.Expect(out).To(SatisfyAll(ContainSubstring(bad.field), ContainSubstring(bad.says)), "%s: the refusal names %s and says %q", bad.what, bad.field, bad.says)
		t.Logf("%s refused: %s", bad.what, strings.TrimSpace(out))
	}

	// Nothing reached the cluster or its pods: watch for a while, not just
	// once.
	g.Consistently(func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &bc); err != nil {
			return err
		}
		if bc.Generation != generation {
			return fmt.Errorf("the refused applies changed the BindCluster (generation %d -> %d)", generation, bc.Generation)
		}
		if !meta.IsStatusConditionTrue(bc.Status.Conditions, v1.ConditionConfigValid) {
			return fmt.Errorf("ConfigValid is not True: %s", conditions(bc.Status.Conditions))
		}
		now, _, err := currentRollout(ctx, ns, name)
		if err != nil {
			return err
		}
		if now != before {
			return fmt.Errorf("the StatefulSet moved: %+v -> %+v", before, now)
		}
		var cmNow corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&cm), &cmNow); err != nil {
			return err
		}
		if cmNow.ResourceVersion != cm.ResourceVersion {
			return fmt.Errorf("the ConfigMap changed (resourceVersion %s -> %s)", cm.ResourceVersion, cmNow.ResourceVersion)
		}
		podsNow, err := podStates(ctx, ns, name)
		if err != nil {
			return err
		}
		if describePods(podsNow) != describePods(pods) {
			return fmt.Errorf("pods changed: %s -> %s", describePods(pods), describePods(podsNow))
		}
		return nil
	}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(bc.Status.ConfigHash).To(Equal(before.Hash), "status.configHash is the hash the pods run")

	// The valid manifest again: unchanged, so nothing rolls.
	out, err = env.Kubectl(ctx, manifest(valid), "apply", "-f", "-")
	testkit.Must(t, err)
	g.Expect(out).To(ContainSubstring("unchanged"))
	now, _, err := currentRollout(ctx, ns, name)
	testkit.Must(t, err)
	podsNow, err := podStates(ctx, ns, name)
	testkit.Must(t, err)
	g.Expect(now).To(Equal(before), "the StatefulSet after re-applying the valid manifest")
	g.Expect(describePods(podsNow)).To(Equal(describePods(pods)), "the pods after re-applying the valid manifest")
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
