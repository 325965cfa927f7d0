package controllers

import (
	"fmt"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
)

const (
	namedContainer = "named"
	agentContainer = "agent"
	configVolume   = "config"
	keysVolume     = "keys"
	dataVolume     = "data"
)

// buildStatefulSet returns the desired StatefulSet. The pod template holds
// nothing that changes between reconciles except the config hash, so the
// pods roll exactly when the rendered config or the keys change.
func buildStatefulSet(c *bindv1alpha1.BindCluster, opts ClusterOptions, paths render.Paths, hash string) *appsv1.StatefulSet {
	spec := c.Spec
	replicas := ptr.Deref(spec.Replicas, 3)
	image := spec.Image
	if image == "" {
		image = opts.BindImage
	}
	agentImage := spec.AgentImage
	if agentImage == "" {
		agentImage = opts.AgentImage
	}
	ports := spec.Ports
	if ports.DNS == 0 {
		ports.DNS = 53
	}
	if ports.Agent == 0 {
		ports.Agent = 8453
	}
	if ports.Metrics == 0 {
		ports.Metrics = 9119
	}

	podLabels := objectLabels(c)
	annotations := map[string]string{}
	for k, v := range spec.PodAnnotations {
		annotations[k] = v
	}
	annotations[bindv1alpha1.AnnotationConfigHash] = hash

	mounts := []corev1.VolumeMount{
		{Name: configVolume, MountPath: paths.ConfigDir, ReadOnly: true},
		{Name: keysVolume, MountPath: paths.KeysDir, ReadOnly: true},
		{Name: dataVolume, MountPath: paths.DataDir},
	}
	named := corev1.Container{
		Name:            namedContainer,
		Image:           image,
		ImagePullPolicy: spec.ImagePullPolicy,
		Command:         []string{"/bin/sh", path.Join(paths.ConfigDir, "entrypoint.sh")},
		Ports: []corev1.ContainerPort{
			{Name: "dns-udp", ContainerPort: ports.DNS, Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", ContainerPort: ports.DNS, Protocol: corev1.ProtocolTCP},
		},
		Resources:    spec.Resources,
		VolumeMounts: mounts,
		// The agent answers /readyz only when named answers and every
		// expected zone is loaded, so a pod joins the query Service only
		// when it can serve.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/readyz", Port: intstr.FromInt32(ports.Metrics),
			}},
			PeriodSeconds: 2, FailureThreshold: 3, TimeoutSeconds: 2,
		},
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(ports.DNS)}},
			InitialDelaySeconds: 10, PeriodSeconds: 10, FailureThreshold: 6,
		},
		// Flush journals into the zone files before the pod stops, so a
		// restart loads every dynamic update without replaying journals.
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"rndc", "-k", path.Join(paths.KeysDir, "control.conf"), "-s", "127.0.0.1", "sync", "-clean"},
		}}},
	}
	agent := corev1.Container{
		Name:            agentContainer,
		Image:           agentImage,
		ImagePullPolicy: spec.ImagePullPolicy,
		Args: []string{"agent",
			"--config-dir=" + paths.ConfigDir,
			"--keys-dir=" + paths.KeysDir,
			"--data-dir=" + paths.DataDir,
			fmt.Sprintf("--listen=:%d", ports.Agent),
			fmt.Sprintf("--metrics-listen=:%d", ports.Metrics),
			fmt.Sprintf("--dns-addr=127.0.0.1:%d", ports.DNS),
		},
		Ports: []corev1.ContainerPort{
			{Name: "agent", ContainerPort: ports.Agent, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: ports.Metrics, Protocol: corev1.ProtocolTCP},
		},
		Resources:    spec.AgentResources,
		VolumeMounts: mounts,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}

	affinity := spec.Affinity
	if affinity == nil {
		affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: selectorLabels(c)},
					TopologyKey:   corev1.LabelHostname,
				},
			}},
		}}
	}

	volumes := []corev1.Volume{
		{Name: configVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMapName(c)},
		}}},
		{Name: keysVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: keysSecretName(c), DefaultMode: ptr.To[int32](0o440),
		}}},
	}
	var claims []corev1.PersistentVolumeClaim
	if storageEnabled(c) {
		size := resource.MustParse("1Gi")
		if spec.Storage != nil && spec.Storage.Size != nil {
			size = *spec.Storage.Size
		}
		claim := corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: dataVolume, Labels: selectorLabels(c)},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			},
		}
		if spec.Storage != nil {
			claim.Spec.StorageClassName = spec.Storage.StorageClassName
		}
		claims = append(claims, claim)
	} else {
		volumes = append(volumes, corev1.Volume{Name: dataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}

	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: statefulSetName(c), Namespace: c.Namespace, Labels: objectLabels(c)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         headlessSvcName(c),
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: selectorLabels(c)},
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			// Claims follow the cluster: deleting the BindCluster deletes
			// the StatefulSet and with it the data; scaling down keeps it.
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{named, agent},
					Volumes:                       volumes,
					ImagePullSecrets:              spec.ImagePullSecrets,
					NodeSelector:                  spec.NodeSelector,
					Tolerations:                   spec.Tolerations,
					Affinity:                      affinity,
					TopologySpreadConstraints:     spec.TopologySpreadConstraints,
					PriorityClassName:             spec.PriorityClassName,
					TerminationGracePeriodSeconds: ptr.To[int64](30),
				},
			},
			VolumeClaimTemplates: claims,
		},
	}
}

func storageEnabled(c *bindv1alpha1.BindCluster) bool {
	return c.Spec.Storage == nil || c.Spec.Storage.Enabled == nil || *c.Spec.Storage.Enabled
}
