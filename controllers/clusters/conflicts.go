package clusters

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
)

// ownedObject is one object a BindCluster creates: its kind (for
// messages), an empty object of that kind and its name.
type ownedObject struct {
	kind string
	obj  client.Object
	name string
}

// ownedObjects are every object a BindCluster creates, by name.
func ownedObjects(c *bindv1alpha1.BindCluster) []ownedObject {
	return []ownedObject{
		{"Service", &corev1.Service{}, clusterpods.HeadlessSvcName(c)},
		{"Service", &corev1.Service{}, clusterpods.PrimarySvcName(c)},
		{"Service", &corev1.Service{}, clusterpods.QuerySvcName(c)},
		{"ConfigMap", &corev1.ConfigMap{}, clusterpods.ConfigMapName(c)},
		{"Secret", &corev1.Secret{}, clusterpods.KeysSecretName(c)},
		{"Secret", &corev1.Secret{}, clusterpods.AgentCASecretName(c)},
		{"StatefulSet", &appsv1.StatefulSet{}, clusterpods.StatefulSetName(c)},
		{"PodDisruptionBudget", &policyv1.PodDisruptionBudget{}, c.Name},
		{"NetworkPolicy", &networkingv1.NetworkPolicy{}, c.Name},
	}
}

// nameConflicts lists, as "Kind name", the existing objects with a name
// the cluster needs that the cluster does not control. The client reads
// objects outside the cache from the API server (NewClient), so an
// unlabelled object is seen too.
func (r *BindClusterReconciler) nameConflicts(ctx context.Context, cluster *bindv1alpha1.BindCluster) ([]string, error) {
	var out []string
	for _, o := range ownedObjects(cluster) {
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: o.name}, o.obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !metav1.IsControlledBy(o.obj, cluster) {
			out = append(out, o.kind+" "+o.name)
		}
	}
	return out, nil
}

// conflictMessage names the conflicting objects and says what to do.
func conflictMessage(conflicts []string) string {
	return fmt.Sprintf("%s already exists and is not controlled by this BindCluster; the operator never modifies it and creates nothing for this cluster until it is gone: delete it (or rename this BindCluster), and the operator creates its own.",
		strings.Join(conflicts, ", "))
}
