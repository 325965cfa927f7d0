package clusters

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
)

// live is what the API server holds for a StatefulSet built from c: the
// desired spec plus the defaults it fills in.
func live(c *bindv1alpha1.BindCluster) *appsv1.StatefulSetSpec {
	spec := buildStatefulSet(c, ClusterOptions{}, render.DefaultPaths(), "h").Spec.DeepCopy()
	for i := range spec.VolumeClaimTemplates {
		fs := corev1.PersistentVolumeFilesystem
		spec.VolumeClaimTemplates[i].Spec.VolumeMode = &fs
		spec.VolumeClaimTemplates[i].Status.Phase = corev1.ClaimPending
	}
	return spec
}

func TestKeepImmutable(t *testing.T) {
	cluster := func(storage *bindv1alpha1.StorageSpec) *bindv1alpha1.BindCluster {
		return &bindv1alpha1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "ns"}, Spec: bindv1alpha1.BindClusterSpec{Storage: storage}}
	}
	size := resource.MustParse("5Gi")
	for name, tc := range map[string]struct {
		was, now   *bindv1alpha1.StorageSpec
		keepsLive  bool
		wantClaims int
	}{
		"unchanged: the desired claims stay, without the defaults": {nil, nil, false, 1},
		"new size: the live claims stay":                           {nil, &bindv1alpha1.StorageSpec{Size: &size}, true, 1},
		"storage turned off: the live claims stay":                 {nil, &bindv1alpha1.StorageSpec{Enabled: ptr.To(false)}, true, 1},
		"storage turned on: still none":                            {&bindv1alpha1.StorageSpec{Enabled: ptr.To(false)}, nil, true, 0},
	} {
		t.Run(name, func(t *testing.T) {
			l := live(cluster(tc.was))
			desired := buildStatefulSet(cluster(tc.now), ClusterOptions{}, render.DefaultPaths(), "h").Spec
			keepImmutable(&desired, l)
			if got := len(desired.VolumeClaimTemplates); got != tc.wantClaims {
				t.Fatalf("%d claim templates, want %d", got, tc.wantClaims)
			}
			if kept := equality.Semantic.DeepEqual(desired.VolumeClaimTemplates, l.VolumeClaimTemplates); kept != tc.keepsLive {
				t.Errorf("live claim templates kept: %v, want %v", kept, tc.keepsLive)
			}
			if !equality.Semantic.DeepEqual(desired.Selector, l.Selector) || desired.ServiceName != l.ServiceName {
				t.Error("selector or service name changed")
			}
		})
	}
}
