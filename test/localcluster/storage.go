package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// StorageClassName is the cluster's default StorageClass. Its volumes are
// `local` PersistentVolumes in folders under the work folder: unlike
// hostPath, the kubelet applies a pod's fsGroup to them, as a cloud disk
// would get it.
const StorageClassName = "local"

const provisionerName = "localcluster.bind.unkin.net/local"

// startProvisioner makes the default StorageClass and a small external
// provisioner for it: each claim of the class gets its own PersistentVolume
// and folder; a Released volume is deleted with its folder.
func (c *Cluster) startProvisioner(ctx context.Context) error {
	mode := storagev1.VolumeBindingImmediate
	reclaim := corev1.PersistentVolumeReclaimRetain
	_, err := c.client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       provisionerName,
		VolumeBindingMode: &mode,
		ReclaimPolicy:     &reclaim,
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return errorf("storage class: %v", err)
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		c.runProvisioner(c.bgCtx)
	}()
	return nil
}

// provisionerResync is how often the provisioner looks at every claim and
// volume again without an event: it retries what failed.
const provisionerResync = 10 * time.Second

// runProvisioner acts on claims and volumes as the API server reports
// their changes, from informers, as a real external provisioner does: no
// polling load on the API server the benchmarks measure.
func (c *Cluster) runProvisioner(ctx context.Context) {
	claims := corev1informers.NewPersistentVolumeClaimInformer(c.client, metav1.NamespaceAll, provisionerResync, nil)
	vols := corev1informers.NewPersistentVolumeInformer(c.client, provisionerResync, nil)
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default: // a pass is already due; it reads the cache as it is then
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
	}
	informers := []cache.SharedIndexInformer{claims, vols}
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(handler); err != nil {
			c.opts.Logf("localcluster: provisioner: %v", err)
			return
		}
	}
	var running sync.WaitGroup
	defer running.Wait() // the informers stop with ctx
	for _, inf := range informers {
		running.Add(1)
		go func() {
			defer running.Done()
			inf.Run(ctx.Done())
		}()
	}
	// A pass before both caches are full would miss a claim's volume and
	// make it again.
	if !cache.WaitForCacheSync(ctx.Done(), claims.HasSynced, vols.HasSynced) {
		return
	}
	claimLister := corev1listers.NewPersistentVolumeClaimLister(claims.GetIndexer())
	volLister := corev1listers.NewPersistentVolumeLister(vols.GetIndexer())
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			c.provisionOnce(ctx, claimLister, volLister)
		}
	}
}

// provisionOnce gives each pending claim of the class its volume and
// deletes the class's released volumes, from the informers' caches.
func (c *Cluster) provisionOnce(ctx context.Context, claims corev1listers.PersistentVolumeClaimLister, vols corev1listers.PersistentVolumeLister) {
	pending, _ := claims.List(labels.Everything())
	for _, pvc := range pending {
		if pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil {
			continue
		}
		if sc := pvc.Spec.StorageClassName; sc == nil || *sc != StorageClassName {
			continue
		}
		if _, err := vols.Get(volumeName(pvc)); err == nil {
			continue // made already; the PV controller binds it
		}
		c.provision(ctx, pvc)
	}
	all, _ := vols.List(labels.Everything())
	for _, pv := range all {
		if pv.Spec.StorageClassName != StorageClassName || pv.Status.Phase != corev1.VolumeReleased || pv.DeletionTimestamp != nil {
			continue
		}
		if err := c.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err == nil && pv.Spec.Local != nil {
			_ = os.RemoveAll(pv.Spec.Local.Path)
		}
	}
}

// volumeName is the PersistentVolume made for pvc.
func volumeName(pvc *corev1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

func (c *Cluster) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) {
	name := volumeName(pvc)
	dir := c.opts.path("volumes", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.opts.Logf("localcluster: provision %s/%s: %v", pvc.Namespace, pvc.Name, err)
		return
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	fs := corev1.PersistentVolumeFilesystem
	_, err := c.client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": provisionerName},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              StorageClassName,
			VolumeMode:                    &fs,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: dir},
			},
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{NodeName},
				}}}},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.opts.Logf("localcluster: provision %s/%s: %v", pvc.Namespace, pvc.Name, err)
		_ = os.Remove(filepath.Clean(dir))
	}
}
