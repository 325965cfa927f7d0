package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
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
	if out, err := kubectl(ctx, t, manifest(`'minimal-responses yes;'`), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of a valid BindCluster failed: %v\n%s", err, out)
	}
	waitClusterReady(ctx, t, ns, name, 2)
	before, _, err := currentRollout(ctx, ns, name)
	must(t, err)
	pods, err := podStates(ctx, ns, name)
	must(t, err)
	var cm corev1.ConfigMap
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-config"}, &cm))
	var bc v1.BindCluster
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &bc))
	generation := bc.Generation
	t.Logf("ready: StatefulSet generation %d, hash %s, pods %s", before.Generation, shortHash(before.Hash), describePods(pods))

	// 1. Refused at admission, with the field path.
	injection := `'minimal-responses yes; }; zone "evil" { type primary; file "/etc/shadow"; }; options { recursion yes;'`
	out, err := kubectl(ctx, t, manifest(injection), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.extraOptions[0]") {
		t.Fatalf("kubectl apply of a block-escaping extraOptions should be refused with the field path spec.extraOptions[0]; got err=%v:\n%s", err, out)
	}
	t.Logf("kubectl refused the injection:\n%s", strings.TrimSpace(out))
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &bc))
	if bc.Generation != generation {
		t.Fatalf("the refused apply changed the BindCluster (generation %d -> %d)", generation, bc.Generation)
	}

	// 2. Admitted, rejected by named-checkconf.
	if out, err := kubectl(ctx, t, manifest(`'minimal-responses yes;', 'no-such-option yes;'`), "apply", "-f", "-"); err != nil {
		t.Fatalf("the webhook refused 'no-such-option yes;' (err=%v); it was expected to pass admission and be caught by named-checkconf:\n%s", err, out)
	}
	start := time.Now()
	var cond *metav1.Condition
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &bc); err != nil {
			return false, nil
		}
		cond = meta.FindStatusCondition(bc.Status.Conditions, v1.ConditionConfigValid)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.ObservedGeneration == bc.Generation, nil
	})
	if err != nil {
		t.Fatalf("ConfigValid never became False for the rejected option: %+v", bc.Status.Conditions)
	}
	t.Logf("ConfigValid=False after %s: reason %s: %s", time.Since(start).Round(time.Millisecond), cond.Reason, cond.Message)
	if cond.Reason != "ConfigRejected" || !strings.Contains(cond.Message, "no-such-option") || !strings.Contains(cond.Message, "unknown option") {
		t.Errorf("ConfigValid should carry reason ConfigRejected and named-checkconf's message about no-such-option; got %s: %s", cond.Reason, cond.Message)
	}
	ev := waitEvent(ctx, t, ns, name, corev1.EventTypeWarning, "ConfigRejected")
	t.Logf("Warning event %s: %s", ev.Reason, ev.Note)

	// Nothing reaches the pods: watch for a while, not just once.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		now, _, err := currentRollout(ctx, ns, name)
		must(t, err)
		if now != before {
			t.Fatalf("the rejected config reached the StatefulSet: %+v -> %+v", before, now)
		}
		var cmNow corev1.ConfigMap
		must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(&cm), &cmNow))
		if cmNow.ResourceVersion != cm.ResourceVersion {
			for k, v := range cmNow.Data {
				if strings.Contains(v, "no-such-option") {
					t.Fatalf("the rejected option reached the ConfigMap (%s)", k)
				}
			}
		}
		podsNow, err := podStates(ctx, ns, name)
		must(t, err)
		if describePods(podsNow) != describePods(pods) {
			t.Fatalf("pods changed while the config was rejected: %s -> %s", describePods(pods), describePods(podsNow))
		}
		time.Sleep(time.Second)
	}
	if bc.Status.ConfigHash != before.Hash {
		t.Errorf("status.configHash moved to %s while the pods run %s", shortHash(bc.Status.ConfigHash), shortHash(before.Hash))
	}

	// 3. Fixing the spec validates again, and since the config is the one
	// the pods already run, nothing rolls.
	if out, err := kubectl(ctx, t, manifest(`'minimal-responses yes;'`), "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply of the fixed BindCluster failed: %v\n%s", err, out)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &bc); err != nil {
			return false, nil
		}
		cond = meta.FindStatusCondition(bc.Status.Conditions, v1.ConditionConfigValid)
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == bc.Generation, nil
	})
	if err != nil {
		t.Fatalf("ConfigValid did not return to True after the fix: %+v", bc.Status.Conditions)
	}
	now, _, err := currentRollout(ctx, ns, name)
	must(t, err)
	podsNow, err := podStates(ctx, ns, name)
	must(t, err)
	if now != before || describePods(podsNow) != describePods(pods) {
		t.Errorf("fixing the spec rolled the cluster: %+v -> %+v, pods %s -> %s", before, now, describePods(pods), describePods(podsNow))
	}
}

// waitEvent waits for an event of type and reason about the BindCluster.
func waitEvent(ctx context.Context, t *testing.T, ns, name, typ, reason string) *eventsv1.Event {
	t.Helper()
	var found *eventsv1.Event
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		for i, e := range list.Items {
			if e.Regarding.Kind == "BindCluster" && e.Regarding.Name == name && e.Type == typ && e.Reason == reason {
				found = &list.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event %s about BindCluster %s/%s", typ, reason, ns, name)
	}
	return found
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
