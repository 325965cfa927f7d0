package localcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fileData struct {
	data []byte
	mode os.FileMode
}

// atomicWrite publishes files into dir the way the kubelet does: the data
// lives in a timestamped folder, `..data` is a symlink to it that is
// swapped with a rename, and each top-level name is a symlink through
// `..data`. A reader therefore sees either the old or the new set, and an
// update reaches a running container through its bind mount.
func atomicWrite(dir string, files map[string]fileData) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ts := fmt.Sprintf("..%d", time.Now().UnixNano())
	tsDir := filepath.Join(dir, ts)
	if err := os.Mkdir(tsDir, 0o755); err != nil {
		return err
	}
	tops := map[string]bool{}
	for name, f := range files {
		clean := filepath.Clean(name)
		if filepath.IsAbs(clean) || clean == "." || strings.HasPrefix(clean, "..") {
			return fmt.Errorf("invalid path %q in volume", name)
		}
		p := filepath.Join(tsDir, clean)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
		tops[strings.SplitN(clean, string(filepath.Separator), 2)[0]] = true
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(ts, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return err
	}
	for top := range tops {
		link := filepath.Join(dir, top)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join("..data", top) {
			continue
		}
		_ = os.RemoveAll(link)
		if err := os.Symlink(filepath.Join("..data", top), link); err != nil {
			return err
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		switch {
		case n == "..data" || n == ts:
		case strings.HasPrefix(n, ".."):
			_ = os.RemoveAll(filepath.Join(dir, n))
		case !tops[n]:
			_ = os.RemoveAll(filepath.Join(dir, n))
		}
	}
	return nil
}

func payloadHash(files map[string]fileData) string {
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s|%o|%d:", len(k), k, files[k].mode, len(files[k].data))
		h.Write(files[k].data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func modeOf(item *int32, def *int32, fallback os.FileMode) os.FileMode {
	if item != nil {
		return os.FileMode(*item)
	}
	if def != nil {
		return os.FileMode(*def)
	}
	return fallback
}

// keyPayload maps a ConfigMap's or Secret's keys to files (items select
// and rename keys; a missing selected key is an error unless optional).
func keyPayload(data map[string][]byte, items []corev1.KeyToPath, defMode *int32, optional bool, what string) (map[string]fileData, error) {
	out := map[string]fileData{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = fileData{data: v, mode: modeOf(nil, defMode, 0o644)}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		out[it.Path] = fileData{data: v, mode: modeOf(it.Mode, defMode, 0o644)}
	}
	return out, nil
}

func configMapData(cm *corev1.ConfigMap) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}

// volumePayload computes the files of a ConfigMap, Secret, projected or
// downwardAPI volume from the informer caches. waiting is set when the
// source does not exist yet (the kubelet keeps such a pod ContainerCreating).
func (w *podWorker) volumePayload(pod *corev1.Pod, v corev1.Volume) (files map[string]fileData, err error) {
	n := w.node
	ns := pod.Namespace
	switch {
	case v.ConfigMap != nil:
		cm, err := n.cmLister.ConfigMaps(ns).Get(v.ConfigMap.Name)
		if apierrors.IsNotFound(err) && v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
			return map[string]fileData{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("configmap %q: %w", v.ConfigMap.Name, err)
		}
		return keyPayload(configMapData(cm), v.ConfigMap.Items, v.ConfigMap.DefaultMode, ptrTrue(v.ConfigMap.Optional), "configmap "+cm.Name)
	case v.Secret != nil:
		s, err := n.secretLister.Secrets(ns).Get(v.Secret.SecretName)
		if apierrors.IsNotFound(err) && v.Secret.Optional != nil && *v.Secret.Optional {
			return map[string]fileData{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("secret %q: %w", v.Secret.SecretName, err)
		}
		return keyPayload(s.Data, v.Secret.Items, v.Secret.DefaultMode, ptrTrue(v.Secret.Optional), "secret "+s.Name)
	case v.DownwardAPI != nil:
		return w.downwardPayload(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
	case v.Projected != nil:
		out := map[string]fileData{}
		for _, src := range v.Projected.Sources {
			var part map[string]fileData
			var err error
			switch {
			case src.ConfigMap != nil:
				part, err = w.volumePayload(pod, corev1.Volume{VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: src.ConfigMap.LocalObjectReference, Items: src.ConfigMap.Items,
					DefaultMode: v.Projected.DefaultMode, Optional: src.ConfigMap.Optional}}})
			case src.Secret != nil:
				part, err = w.volumePayload(pod, corev1.Volume{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: src.Secret.Name, Items: src.Secret.Items,
					DefaultMode: v.Projected.DefaultMode, Optional: src.Secret.Optional}}})
			case src.DownwardAPI != nil:
				part, err = w.downwardPayload(pod, src.DownwardAPI.Items, v.Projected.DefaultMode)
			default:
				err = fmt.Errorf("projected source other than configMap, secret or downwardAPI (e.g. serviceAccountToken) is not supported by localcluster")
			}
			if err != nil {
				return nil, err
			}
			for k, f := range part {
				out[k] = f
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("not a projected kind")
}

func ptrTrue(b *bool) bool { return b != nil && *b }

func (w *podWorker) downwardPayload(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defMode *int32) (map[string]fileData, error) {
	out := map[string]fileData{}
	for _, it := range items {
		if it.FieldRef == nil {
			return nil, fmt.Errorf("downwardAPI item %q: only fieldRef is supported by localcluster", it.Path)
		}
		val, err := w.fieldValue(pod, it.FieldRef.FieldPath)
		if err != nil {
			return nil, err
		}
		out[it.Path] = fileData{data: []byte(val), mode: modeOf(it.Mode, defMode, 0o644)}
	}
	return out, nil
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// fieldValue resolves a downward-API field path.
func (w *podWorker) fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return w.ip(), nil
	case "status.hostIP", "status.hostIPs":
		return gatewayIP.String(), nil
	}
	for _, pfx := range []string{"metadata.labels['", "metadata.annotations['"} {
		if strings.HasPrefix(path, pfx) && strings.HasSuffix(path, "']") {
			key := strings.TrimSuffix(strings.TrimPrefix(path, pfx), "']")
			if strings.HasPrefix(pfx, "metadata.labels") {
				return pod.Labels[key], nil
			}
			return pod.Annotations[key], nil
		}
	}
	return "", fmt.Errorf("field path %q is not supported by localcluster", path)
}

// claimDir is the host folder behind a bound claim; it lives as long as the
// claim, so it survives pod restarts.
func (n *node) claimDir(pvc *corev1.PersistentVolumeClaim) string {
	return filepath.Join(n.c.workDir, "claims", pvc.Namespace+"_"+pvc.Name+"_"+string(pvc.UID))
}

const pvLabel = "localcluster.bind.unkin.net/claim-uid"

// bindClaims is the node's volume provisioner and binder in one: every
// pending claim gets a hostPath PersistentVolume on a fresh folder, and the
// claim and the volume are marked Bound. Volumes whose claim is gone are
// deleted with their folder.
func (n *node) bindClaims(ctx context.Context) {
	pvcs, _ := n.pvcLister.List(everything())
	live := map[string]bool{}
	for _, pvc := range pvcs {
		live[string(pvc.UID)] = true
		if pvc.Status.Phase == corev1.ClaimBound || pvc.DeletionTimestamp != nil {
			continue
		}
		if err := n.bindClaim(ctx, pvc); err != nil {
			n.c.logf("bind claim %s/%s: %v", pvc.Namespace, pvc.Name, err)
		}
	}
	pvs, err := n.c.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: pvLabel})
	if err != nil {
		return
	}
	for _, pv := range pvs.Items {
		if live[pv.Labels[pvLabel]] {
			continue
		}
		// The claim is gone: Released (the pv-protection controller keeps
		// a Bound volume forever), then deleted (reclaim policy Delete).
		if pv.Status.Phase != corev1.VolumeReleased {
			pv := pv.DeepCopy()
			pv.Status.Phase = corev1.VolumeReleased
			_, _ = n.c.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{})
		}
		if pv.DeletionTimestamp != nil {
			continue
		}
		if err := n.c.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err == nil || apierrors.IsNotFound(err) {
			if pv.Spec.HostPath != nil && strings.HasPrefix(pv.Spec.HostPath.Path, filepath.Join(n.c.workDir, "claims")+"/") {
				_ = os.RemoveAll(pv.Spec.HostPath.Path)
			}
		}
	}
}

func (n *node) bindClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	dir := n.claimDir(pvc)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	pvName := "pvc-" + string(pvc.UID)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{pvLabel: string(pvc.UID)}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   modes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              ptrDeref(pvc.Spec.StorageClassName),
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
		},
	}
	cs := n.c.client.CoreV1()
	if _, err := cs.PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if got, err := cs.PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{}); err == nil && got.Status.Phase != corev1.VolumeBound {
		got.Status.Phase = corev1.VolumeBound
		_, _ = cs.PersistentVolumes().UpdateStatus(ctx, got, metav1.UpdateOptions{})
	}
	cur, err := cs.PersistentVolumeClaims(pvc.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if cur.Spec.VolumeName == "" {
		cur.Spec.VolumeName = pvName
		if cur, err = cs.PersistentVolumeClaims(pvc.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	cur.Status.Phase = corev1.ClaimBound
	cur.Status.AccessModes = modes
	cur.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
	_, err = cs.PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	return err
}

func ptrDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
