package clusters

import (
	"fmt"
	"path"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/render"
)

const (
	namedContainer = "named"
	agentContainer = "agent"
	configVolume   = "config"
	keysVolume     = "keys"
	dataVolume     = "data"

	// sysctlUnprivilegedPortStart is the lowest port a process without
	// CAP_NET_BIND_SERVICE may bind in the pod's network namespace
	// (kernel default 1024). The kubelet allows it by default (a safe,
	// namespaced sysctl).
	sysctlUnprivilegedPortStart = "net.ipv4.ip_unprivileged_port_start"
	privilegedPortsEnd          = 1024

	// drainSeconds is how long a stopping named keeps serving before it
	// flushes and exits: longer than an endpoint takes to leave the
	// Services, far below the termination grace period (30 s).
	drainSeconds = 5
)

// buildStatefulSet returns the desired StatefulSet. The pod template holds
// nothing that changes between reconciles except the config hash and the
// images, so the pods roll exactly when the rendered config or the keys
// change, or when the images do: a pinned one edited, or the operator's
// default, which moves with an operator upgrade, for a cluster that pins
// none.
func buildStatefulSet(c *bindv1alpha1.BindCluster, opts ClusterOptions, paths render.Paths, hash string) *appsv1.StatefulSet {
	spec := c.Spec
	replicas := ptr.Deref(spec.Replicas, 3)
	image, agentImage := opts.images(c)
	pullPolicy := spec.ImagePullPolicy
	if pullPolicy == "" {
		pullPolicy = bindv1alpha1.DefaultImagePullPolicy
	}
	ports := spec.Ports
	if ports.DNS == 0 {
		ports.DNS = bindv1alpha1.DefaultDNSPort
	}
	if ports.Agent == 0 {
		ports.Agent = bindv1alpha1.DefaultAgentPort
	}
	if ports.Metrics == 0 {
		ports.Metrics = bindv1alpha1.DefaultMetricsPort
	}

	podLabels := clusterpods.ObjectLabels(c)
	annotations := map[string]string{}
	for k, v := range spec.PodAnnotations {
		annotations[k] = v
	}
	annotations[bindv1alpha1.AnnotationConfigHash] = hash

	// Both containers run with a read-only root filesystem: everything
	// named and the agent write is under paths.DataDir (named's directory,
	// pid-file, session-keyfile, key-directory, new-zones-directory,
	// catalog zone-directory; managed keys, dumps and statistics files are
	// relative to its directory; extraOptions may name no file), and the
	// entrypoint only creates folders and seeds there.
	mounts := []corev1.VolumeMount{
		{Name: configVolume, MountPath: paths.ConfigDir, ReadOnly: true},
		{Name: keysVolume, MountPath: paths.KeysDir, ReadOnly: true},
		{Name: dataVolume, MountPath: paths.DataDir},
	}
	named := corev1.Container{
		Name:            namedContainer,
		Image:           image,
		ImagePullPolicy: pullPolicy,
		// No -u: named already runs as PodUser, and binds ports below
		// 1024 through the pod's ip_unprivileged_port_start sysctl.
		Command: []string{"/bin/sh", path.Join(paths.ConfigDir, "entrypoint.sh")},
		Ports: []corev1.ContainerPort{
			{Name: "dns-udp", ContainerPort: ports.DNS, Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", ContainerPort: ports.DNS, Protocol: corev1.ProtocolTCP},
		},
		Resources:       spec.Resources,
		VolumeMounts:    mounts,
		SecurityContext: containerSecurityContext(),
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
		// Before named stops: keep serving for drainSeconds while the
		// pod's endpoint leaves the Services (the EndpointSlice update
		// and kube-proxy's resync take about a second; a named that
		// exits first answers connection refused to queries still
		// routed to it), then flush journals into the zone files, so a
		// restart loads every dynamic update without replaying them.
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"/bin/sh", "-c", fmt.Sprintf("sleep %d; exec rndc -k %s -s 127.0.0.1 sync -clean", drainSeconds, path.Join(paths.KeysDir, "control.conf"))},
		}}},
	}
	agent := corev1.Container{
		Name:            agentContainer,
		Image:           agentImage,
		ImagePullPolicy: pullPolicy,
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
		Resources:       spec.AgentResources,
		VolumeMounts:    mounts,
		SecurityContext: containerSecurityContext(),
	}

	affinity := spec.Affinity
	if affinity == nil {
		affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: clusterpods.SelectorLabels(c)},
					TopologyKey:   corev1.LabelHostname,
				},
			}},
		}}
	}

	volumes := []corev1.Volume{
		{Name: configVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: clusterpods.ConfigMapName(c)},
		}}},
		// 0440: the kubelet gives the files the pod's fsGroup, so both
		// containers (PodUser, with PodUser as a supplementary group) read
		// them and no one else does.
		{Name: keysVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: clusterpods.KeysSecretName(c), DefaultMode: ptr.To[int32](0o440),
		}}},
	}
	var claims []corev1.PersistentVolumeClaim
	if storageEnabled(c) {
		size := resource.MustParse("1Gi")
		if spec.Storage != nil && spec.Storage.Size != nil {
			size = *spec.Storage.Size
		}
		claim := corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: dataVolume, Labels: clusterpods.SelectorLabels(c)},
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
		volumes = append(volumes, corev1.Volume{Name: dataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: dataEmptyDir(spec.Storage)}})
	}

	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: clusterpods.StatefulSetName(c), Namespace: c.Namespace, Labels: clusterpods.ObjectLabels(c)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         clusterpods.HeadlessSvcName(c),
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: clusterpods.SelectorLabels(c)},
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
					Containers:      []corev1.Container{named, agent},
					SecurityContext: podSecurityContext(ports),
					// Neither container talks to the API server (the
					// operator calls the agent), nor looks up Services
					// through environment variables.
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
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

// podSecurityContext runs every container as PodUser, non-root, with the
// runtime's seccomp profile; the volumes are group-owned by PodUser so a
// fresh claim is writable. Ports below 1024 (DNS 53, and named's control
// channel on 953 whatever the DNS port) are bound without capabilities by
// lowering ip_unprivileged_port_start to the lowest one the pod binds.
func podSecurityContext(ports bindv1alpha1.ClusterPorts) *corev1.PodSecurityContext {
	user := int64(bindv1alpha1.PodUser)
	sc := &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr.To(true),
		RunAsUser:           ptr.To(user),
		RunAsGroup:          ptr.To(user),
		FSGroup:             ptr.To(user),
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if lowest, ok := lowestPrivilegedPort(ports.DNS, ports.Agent, ports.Metrics, render.ControlPort, render.StatisticsPort); ok {
		sc.Sysctls = []corev1.Sysctl{{Name: sysctlUnprivilegedPortStart, Value: strconv.Itoa(int(lowest))}}
	}
	return sc
}

// lowestPrivilegedPort is the lowest of ports when it is below 1024.
func lowestPrivilegedPort(ports ...int32) (int32, bool) {
	lowest := int32(privilegedPortsEnd)
	for _, p := range ports {
		lowest = min(lowest, p)
	}
	return lowest, lowest < privilegedPortsEnd
}

// containerSecurityContext is both containers': no privilege escalation,
// no capabilities, a read-only root filesystem (every write goes to a
// volume).
func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// dataEmptyDir is the data volume of a cluster without claims. Memory is a
// tmpfs: BIND's journal fsyncs, which stall an UPDATE's NOTIFYs and a
// secondary's transfer on a busy disk for tens to hundreds of
// milliseconds, cost nothing there (docs/behaviours.md, "The data volume
// in memory"). An unset medium is Disk, as before the field existed, so
// existing pod templates do not change.
func dataEmptyDir(s *bindv1alpha1.StorageSpec) *corev1.EmptyDirVolumeSource {
	d := &corev1.EmptyDirVolumeSource{}
	if s == nil {
		return d
	}
	if s.Medium == bindv1alpha1.StorageMediumMemory {
		d.Medium = corev1.StorageMediumMemory
	}
	d.SizeLimit = s.SizeLimit
	return d
}

func storageEnabled(c *bindv1alpha1.BindCluster) bool {
	return c.Spec.Storage == nil || c.Spec.Storage.Enabled == nil || *c.Spec.Storage.Enabled
}

// templateImages are the BIND and agent images of a StatefulSet's pod
// template, "" where a container is missing.
func templateImages(sts *appsv1.StatefulSet) (bind, agent string) {
	for _, c := range sts.Spec.Template.Spec.Containers {
		switch c.Name {
		case namedContainer:
			bind = c.Image
		case agentContainer:
			agent = c.Image
		}
	}
	return bind, agent
}
