package zones

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// A zone larger than one BindZone holds starts from a zone file kept in
// ConfigMaps (spec.seedFrom; bind-operator import writes them). The
// primary's agent is asked whether it lacks the zone file (a stat, every
// reconcile); only then are the ConfigMaps read, checked and streamed to
// it, before the ensure that loads the file. So the file is loaded when
// the zone is created and again on a volume that lost it, and never
// replaces a file that holds dynamic updates. What the file holds beyond
// spec.records and the zone's DNSRecords is the zone's unmanaged data:
// served and transferred, never changed or removed by the operator.

// seedRecheck is how soon a zone whose seed cannot be loaded is looked at
// again: a ConfigMap created later, or fixed, is found without an edit of
// the zone.
const seedRecheck = 30 * time.Second

// seedLoads bounds the seeds read and sent at once, by the whole manager.
var seedLoads = make(chan struct{}, 1)

// seed gives the primary the zone file of spec.seedFrom when it has none.
func (r *BindZoneReconciler) seed(ctx context.Context, zone *bindv1alpha1.BindZone, t *zoneTarget) error {
	if zone.Spec.SeedFrom == nil {
		return nil
	}
	prim := t.primary()
	ac, err := r.agents.Get(ctx, t.cluster, prim.AgentAddr)
	if err != nil {
		return &problem{bindv1alpha1.ReasonPrimaryNotReady, err.Error(), 10 * time.Second}
	}
	ref := agent.ZoneRef{View: t.view, Zone: t.zoneName}
	needed, err := ac.SeedNeeded(ctx, ref)
	if agent.IsNotFound(err) {
		// Without the seed the ensure would write the small one, and the
		// zone file would then exist: wait for this release's agent.
		return &problem{bindv1alpha1.ReasonAgentError, fmt.Sprintf("the agent of the primary %s predates zone seeds (spec.seedFrom); the zone is added once the pods run this release's agent", prim.Pod), time.Minute}
	}
	if err != nil {
		return agentProblem(prim.Pod, err)
	}
	if !needed {
		return nil
	}
	// A file the agent refused stays refused: the digest pins its bytes.
	// Asking again would read and send up to 14 MiB every recheck, and
	// hold the one seed slot other zones wait for.
	if v, ok := r.refusedSeeds.Load(zone.UID); ok && v.(seedRefusal).sha256 == zone.Spec.SeedFrom.SHA256 {
		return &problem{bindv1alpha1.ReasonSeedUnusable, v.(seedRefusal).message, seedRecheck}
	}
	// One seed in memory at a time: a file is up to 14 MiB, and a primary
	// that lost its volume needs every seeded zone again at once.
	select {
	case seedLoads <- struct{}{}:
		defer func() { <-seedLoads }()
	case <-ctx.Done():
		return ctx.Err()
	}
	file, names, err := r.readSeed(ctx, zone)
	if err != nil {
		return err
	}
	res, err := ac.Seed(ctx, ref, zone.Spec.SeedFrom.SHA256, int64(len(file)), bytes.NewReader(file))
	if err != nil {
		var ae *agent.Error
		if errors.As(err, &ae) && ae.Invalid() {
			msg := fmt.Sprintf("the agent of the primary %s refused the zone file of spec.seedFrom (ConfigMaps %v): %s", prim.Pod, names, ae.Message)
			// Not a digest that changed on the way: that one may pass
			// next time.
			if ae.Field != "sha256" {
				r.refusedSeeds.Store(zone.UID, seedRefusal{sha256: zone.Spec.SeedFrom.SHA256, message: msg + "; create a new BindZone with a zone file named loads"})
			}
			return &problem{bindv1alpha1.ReasonSeedUnusable, msg, seedRecheck}
		}
		return agentProblem(prim.Pod, err)
	}
	if res.Written {
		r.Recorder.Eventf(zone, nil, corev1.EventTypeNormal, "SeedLoaded", "Seed", "wrote the zone file of %s (%d records, serial %d) from ConfigMaps %v onto the primary %s, which had none", t.zoneName, res.Records, res.Serial, names, prim.Pod)
	}
	return nil
}

// seedRefusal is the agent's refusal of a zone's seed.
type seedRefusal struct{ sha256, message string }

// readSeed reads spec.seedFrom's ConfigMaps in order and checks the file
// they make: every ConfigMap exists, names this zone in its seed-for
// annotation (the operator reads no other), holds the data key, and the
// whole file has spec.seedFrom.sha256. Refusals name the ConfigMap.
// Whether the file is a zone file of this zone is the agent's to check
// (validate.Seed), once, where it is written.
func (r *BindZoneReconciler) readSeed(ctx context.Context, zone *bindv1alpha1.BindZone) ([]byte, []string, error) {
	unusable := func(format string, args ...any) error {
		return &problem{bindv1alpha1.ReasonSeedUnusable, fmt.Sprintf(format, args...), seedRecheck}
	}
	var file bytes.Buffer
	var names []string
	for i, ref := range zone.Spec.SeedFrom.ConfigMaps {
		at := fmt.Sprintf("spec.seedFrom.configMaps[%d]", i)
		var cm corev1.ConfigMap
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: zone.Namespace, Name: ref.Name}, &cm)
		if apierrors.IsNotFound(err) {
			return nil, nil, unusable("ConfigMap %q (%s) does not exist; the zone is not added to a primary that lacks it. Create it (bind-operator import writes it to seeds.yaml)", ref.Name, at)
		}
		if err != nil {
			return nil, nil, err
		}
		if cm.Annotations[bindv1alpha1.AnnotationSeedFor] != zone.Name {
			return nil, nil, unusable("ConfigMap %q (%s) lacks the annotation %s: %s; the operator reads only ConfigMaps written for this zone. Annotate it if it is", ref.Name, at, bindv1alpha1.AnnotationSeedFor, zone.Name)
		}
		part, ok := cm.Data[bindv1alpha1.SeedDataKey]
		if !ok {
			return nil, nil, unusable("ConfigMap %q (%s) has no data key %q holding its part of the zone file", ref.Name, at, bindv1alpha1.SeedDataKey)
		}
		if file.Len()+len(part) > bindv1alpha1.MaxSeedBytes {
			return nil, nil, unusable("the zone file of spec.seedFrom is larger than %d bytes at ConfigMap %q (%s)", bindv1alpha1.MaxSeedBytes, ref.Name, at)
		}
		file.WriteString(part)
		names = append(names, ref.Name)
	}
	if got := validate.SeedDigest(file.Bytes()); got != zone.Spec.SeedFrom.SHA256 {
		return nil, nil, unusable("the zone file of spec.seedFrom (ConfigMaps %v) has SHA-256 %s, not spec.seedFrom.sha256 %s: a part changed, is missing or is out of order; restore the parts or create a new BindZone for the new file", names, got, zone.Spec.SeedFrom.SHA256)
	}
	return file.Bytes(), names, nil
}
