package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestBrokenExtraOptionsNeverReachPods (issue 6 g): a broken extraOptions
// never reaches the pods. A statement the webhook can judge (an attempt to
// escape the options block) is refused at kubectl apply with the field
// path; a well-formed statement that only named knows is wrong (an unknown
// option) is admitted, but named-checkconf rejects the render, so the
// BindCluster reports ConfigValid=False with named's message and a Warning
// event, and the ConfigMap, the pod template's hash and the pods stay as
// they were. Removing the statement makes the config valid again without a
// roll (same hash).
func TestBrokenExtraOptionsNeverReachPods(t *testing.T) {
	t.Parallel()
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
	if out, err := env.Kubectl(ctx, manifest(`'minimal-responses yes;'`), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of a valid BindCluster failed: %v\n%s", err, out)
	}
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
	t.Logf("ready: StatefulSet generation %d, hash %s, pods %s", before.Generation, shortHash(before.Hash), describePods(pods))

	// 1. Refused at admission, with the field path.
	injection := `'minimal-responses yes; }; zone "evil" { type primary; file "/etc/shadow"; }; options { recursion yes;'`
	out, err := env.Kubectl(ctx, manifest(injection), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.extraOptions[0]") {
		t.Fatalf("kubectl apply of a block-escaping extraOptions should be refused with the field path spec.extraOptions[0]; got err=%v:\n%s", err, out)
	}
	t.Logf("kubectl refused the injection:\n%s", strings.TrimSpace(out))
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &bc))
	if bc.Generation != generation {
		t.Fatalf("the refused apply changed the BindCluster (generation %d -> %d)", generation, bc.Generation)
	}

	// 2. Admitted, rejected by named-checkconf.
	if out, err := env.Kubectl(ctx, manifest(`'minimal-responses yes;', 'no-such-option yes;'`), "apply", "-f", "-"); err != nil {
		t.Fatalf("the webhook refused 'no-such-option yes;' (err=%v); it was expected to pass admission and be caught by named-checkconf:\n%s", err, out)
	}
	start := time.Now()
	cond := waitConfigValid(ctx, t, ns, name, metav1.ConditionFalse)
	t.Logf("ConfigValid=False after %s: reason %s: %s", time.Since(start).Round(time.Millisecond), cond.Reason, cond.Message)
	if cond.Reason != "ConfigRejected" || !strings.Contains(cond.Message, "no-such-option") || !strings.Contains(cond.Message, "unknown option") {
		t.Errorf("ConfigValid should carry reason ConfigRejected and named-checkconf's message about no-such-option; got %s: %s", cond.Reason, cond.Message)
	}
	ev := waitEvent(ctx, t, ns, name, corev1.EventTypeWarning, "ConfigRejected")
	t.Logf("Warning event %s: %s", ev.Reason, ev.Note)

	// Nothing reaches the pods: watch for a while, not just once.
	NewWithT(t).Consistently(func() error {
		now, _, err := currentRollout(ctx, ns, name)
		if err != nil {
			return err
		}
		if now != before {
			return fmt.Errorf("the rejected config reached the StatefulSet: %+v -> %+v", before, now)
		}
		var cmNow corev1.ConfigMap
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&cm), &cmNow); err != nil {
			return err
		}
		for k, v := range cmNow.Data {
			if strings.Contains(v, "no-such-option") {
				return fmt.Errorf("the rejected option reached the ConfigMap (%s)", k)
			}
		}
		podsNow, err := podStates(ctx, ns, name)
		if err != nil {
			return err
		}
		if describePods(podsNow) != describePods(pods) {
			return fmt.Errorf("pods changed while the config was rejected: %s -> %s", describePods(pods), describePods(podsNow))
		}
		return nil
	}).WithContext(ctx).WithTimeout(10 * time.Second).Should(Succeed())
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &bc))
	if bc.Status.ConfigHash != before.Hash {
		t.Errorf("status.configHash moved to %s while the pods run %s", shortHash(bc.Status.ConfigHash), shortHash(before.Hash))
	}

	// 3. Fixing the spec validates again, and since the config is the one
	// the pods already run, nothing rolls.
	if out, err := env.Kubectl(ctx, manifest(`'minimal-responses yes;'`), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of the fixed BindCluster failed: %v\n%s", err, out)
	}
	waitConfigValid(ctx, t, ns, name, metav1.ConditionTrue)
	now, _, err := currentRollout(ctx, ns, name)
	testkit.Must(t, err)
	podsNow, err := podStates(ctx, ns, name)
	testkit.Must(t, err)
	if now != before || describePods(podsNow) != describePods(pods) {
		t.Errorf("fixing the spec rolled the cluster: %+v -> %+v, pods %s -> %s", before, now, describePods(pods), describePods(podsNow))
	}
}

// waitConfigValid waits until the BindCluster's ConfigValid condition has
// status for its current generation, and returns it.
func waitConfigValid(ctx context.Context, t *testing.T, ns, name string, status metav1.ConditionStatus) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	NewWithT(t).Eventually(func() error {
		var bc v1.BindCluster
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &bc); err != nil {
			return err
		}
		cond = meta.FindStatusCondition(bc.Status.Conditions, v1.ConditionConfigValid)
		if cond == nil || cond.Status != status || cond.ObservedGeneration != bc.Generation {
			return fmt.Errorf("generation %d, conditions %s", bc.Generation, conditions(bc.Status.Conditions))
		}
		return nil
	}).WithContext(ctx).WithTimeout(60*time.Second).Should(Succeed(), "ConfigValid of BindCluster %s/%s never became %s", ns, name, status)
	return cond
}

// waitEvent waits for an event of type and reason about the BindCluster.
func waitEvent(ctx context.Context, t *testing.T, ns, name, typ, reason string) *eventsv1.Event {
	t.Helper()
	var found *eventsv1.Event
	NewWithT(t).Eventually(func() error {
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for i, e := range list.Items {
			if e.Regarding.Kind == "BindCluster" && e.Regarding.Name == name && e.Type == typ && e.Reason == reason {
				found = &list.Items[i]
				return nil
			}
		}
		return fmt.Errorf("%d events in %s, none %s %s about BindCluster %s", len(list.Items), ns, typ, reason, name)
	}).WithContext(ctx).WithTimeout(60 * time.Second).Should(Succeed())
	return found
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
