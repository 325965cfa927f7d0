package clusters

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/render"
)

// The BIND pods run under a real kubelet with a hardened security context:
// non-root (the images' user 65532), no capabilities, no privilege
// escalation, read-only root filesystems, the runtime's seccomp profile, no
// API token and no Service environment variables.

func stsCluster(mutate func(*bindv1alpha1.BindClusterSpec)) *bindv1alpha1.BindCluster {
	c := &bindv1alpha1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "ns"}}
	if mutate != nil {
		mutate(&c.Spec)
	}
	return c
}

func podSpecOf(c *bindv1alpha1.BindCluster) corev1.PodSpec {
	return buildStatefulSet(c, ClusterOptions{BindImage: "bind:test", AgentImage: "agent:test"}, render.DefaultPaths(), "h").Spec.Template.Spec
}

func TestBindPodSecurity(t *testing.T) {
	hardened := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	podContext := func(sysctls ...corev1.Sysctl) *corev1.PodSecurityContext {
		return &corev1.PodSecurityContext{
			RunAsNonRoot:        ptr.To(true),
			RunAsUser:           ptr.To[int64](65532),
			RunAsGroup:          ptr.To[int64](65532),
			FSGroup:             ptr.To[int64](65532),
			FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
			SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			Sysctls:             sysctls,
		}
	}
	portStart := func(v string) corev1.Sysctl {
		return corev1.Sysctl{Name: "net.ipv4.ip_unprivileged_port_start", Value: v}
	}
	for name, tc := range map[string]struct {
		spec       func(*bindv1alpha1.BindClusterSpec)
		wantPod    *corev1.PodSecurityContext
		wantPull   corev1.PullPolicy
		wantDNSArg string
	}{
		"defaults: named binds 53 without capabilities": {
			wantPod: podContext(portStart("53")), wantPull: corev1.PullIfNotPresent, wantDNSArg: "--dns-addr=127.0.0.1:53",
		},
		"dns 853": {
			spec:    func(s *bindv1alpha1.BindClusterSpec) { s.Ports.DNS = 853 },
			wantPod: podContext(portStart("853")), wantPull: corev1.PullIfNotPresent, wantDNSArg: "--dns-addr=127.0.0.1:853",
		},
		"dns 5353: named's control channel on 953 still needs the sysctl": {
			spec:    func(s *bindv1alpha1.BindClusterSpec) { s.Ports.DNS = 5353 },
			wantPod: podContext(portStart("953")), wantPull: corev1.PullIfNotPresent, wantDNSArg: "--dns-addr=127.0.0.1:5353",
		},
		"an agent port below the DNS port lowers the start": {
			spec: func(s *bindv1alpha1.BindClusterSpec) {
				s.Ports = bindv1alpha1.ClusterPorts{DNS: 53, Agent: 43, Metrics: 9119}
			},
			wantPod: podContext(portStart("43")), wantPull: corev1.PullIfNotPresent, wantDNSArg: "--dns-addr=127.0.0.1:53",
		},
		"a pull policy given is kept": {
			spec:    func(s *bindv1alpha1.BindClusterSpec) { s.ImagePullPolicy = corev1.PullAlways },
			wantPod: podContext(portStart("53")), wantPull: corev1.PullAlways, wantDNSArg: "--dns-addr=127.0.0.1:53",
		},
		"storage off": {
			spec:    func(s *bindv1alpha1.BindClusterSpec) { s.Storage = &bindv1alpha1.StorageSpec{Enabled: ptr.To(false)} },
			wantPod: podContext(portStart("53")), wantPull: corev1.PullIfNotPresent, wantDNSArg: "--dns-addr=127.0.0.1:53",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pod := podSpecOf(stsCluster(tc.spec))
			g.Expect(pod.SecurityContext).To(Equal(tc.wantPod))
			g.Expect(pod.AutomountServiceAccountToken).To(Equal(ptr.To(false)), "the pods never call the API server")
			g.Expect(pod.EnableServiceLinks).To(Equal(ptr.To(false)))
			g.Expect(pod.HostNetwork).To(BeFalse(), "the sysctl is namespaced only off the host network")
			g.Expect(pod.InitContainers).To(BeEmpty())
			g.Expect(pod.Containers).To(HaveLen(2))
			for _, ctr := range pod.Containers {
				// Exactly the hardened context: no per-container user or
				// group that would differ from the pod's fsGroup.
				g.Expect(ctr.SecurityContext).To(Equal(hardened), ctr.Name)
				g.Expect(ctr.ImagePullPolicy).To(Equal(tc.wantPull), ctr.Name)
			}
			named, agent := pod.Containers[0], pod.Containers[1]
			g.Expect(named.Name).To(Equal(namedContainer))
			g.Expect(named.Command).To(Equal([]string{"/bin/sh", "/etc/bind-operator/config/entrypoint.sh"}))
			g.Expect(named.Args).To(BeEmpty())
			g.Expect(agent.Args).To(ContainElement(tc.wantDNSArg))
		})
	}
}

func TestLowestPrivilegedPort(t *testing.T) {
	for name, tc := range map[string]struct {
		ports  []int32
		want   int32
		wantOK bool
	}{
		"DNS 53":                     {[]int32{53, 8453, 9119}, 53, true},
		"the lowest of several":      {[]int32{953, 80, 53, 8053}, 53, true},
		"1023 is privileged":         {[]int32{1023, 5353}, 1023, true},
		"1024 and above are not":     {[]int32{1024, 5353, 8453}, 1024, false},
		"nothing below 1024 at all":  {[]int32{5353}, 1024, false},
		"no ports: nothing to lower": {nil, 1024, false},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := lowestPrivilegedPort(tc.ports...)
			g.Expect(ok).To(Equal(tc.wantOK))
			if ok {
				g.Expect(got).To(Equal(tc.want))
			}
		})
	}
}

// TestBindPodVolumes pins the mounts and volumes, and the keys Secret's
// mode: 0440 files, group-owned by the pod's fsGroup, which both containers
// run as.
func TestBindPodVolumes(t *testing.T) {
	p := render.DefaultPaths()
	mounts := []corev1.VolumeMount{
		{Name: configVolume, MountPath: p.ConfigDir, ReadOnly: true},
		{Name: keysVolume, MountPath: p.KeysDir, ReadOnly: true},
		{Name: dataVolume, MountPath: p.DataDir},
	}
	config := corev1.Volume{Name: configVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "dns-config"},
	}}}
	keys := corev1.Volume{Name: keysVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "dns-keys", DefaultMode: ptr.To[int32](0o440),
	}}}
	data := corev1.Volume{Name: dataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	for name, tc := range map[string]struct {
		storage     *bindv1alpha1.StorageSpec
		wantVolumes []corev1.Volume
		wantClaims  []string
	}{
		"storage on (default): data is the claim": {nil, []corev1.Volume{config, keys}, []string{dataVolume}},
		"storage off: data is an emptyDir":        {&bindv1alpha1.StorageSpec{Enabled: ptr.To(false)}, []corev1.Volume{config, keys, data}, nil},
		"storage off on Disk: the same emptyDir": {
			&bindv1alpha1.StorageSpec{Enabled: ptr.To(false), Medium: bindv1alpha1.StorageMediumDisk}, []corev1.Volume{config, keys, data}, nil,
		},
		"storage off in Memory: a tmpfs with its limit": {
			&bindv1alpha1.StorageSpec{Enabled: ptr.To(false), Medium: bindv1alpha1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("256Mi"))},
			[]corev1.Volume{config, keys, {Name: dataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
				Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("256Mi")),
			}}}},
			nil,
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c := stsCluster(func(s *bindv1alpha1.BindClusterSpec) { s.Storage = tc.storage })
			g.Expect(clusterpods.ConfigMapName(c)).To(Equal("dns-config"))
			g.Expect(clusterpods.KeysSecretName(c)).To(Equal("dns-keys"))
			sts := buildStatefulSet(c, ClusterOptions{}, p, "h")
			pod := sts.Spec.Template.Spec
			g.Expect(pod.Volumes).To(Equal(tc.wantVolumes))
			var claims []string
			for _, cl := range sts.Spec.VolumeClaimTemplates {
				claims = append(claims, cl.Name)
			}
			g.Expect(claims).To(Equal(tc.wantClaims))
			for _, ctr := range pod.Containers {
				g.Expect(ctr.VolumeMounts).To(Equal(mounts), ctr.Name)
			}
			g.Expect(*pod.SecurityContext.FSGroup).To(Equal(*pod.SecurityContext.RunAsUser))
			g.Expect(*pod.SecurityContext.RunAsGroup).To(Equal(*pod.SecurityContext.FSGroup))
		})
	}
}

// namedPathStatement matches every statement of a rendered named.conf that
// names a file or folder named may write.
var namedPathStatement = regexp.MustCompile(`(?m)\b(directory|pid-file|session-keyfile|key-directory|new-zones-directory|zone-directory|managed-keys-directory|file|dump-file|statistics-file|memstatistics-file|lock-file) "([^"]+)"`)

// entrypointPath matches what the rendered entrypoint creates or seeds.
var entrypointPath = regexp.MustCompile(`(?m)^\s*(mkdir -p|seed '[^']*') '([^']+)'$`)

// TestEveryWritablePathIsOnAWritableVolume renders real configs and checks
// that every path named (as the primary and as a secondary), the
// entrypoint and the agent write lies on a writable volume of its
// container: the root filesystem is read-only, so a path outside one
// fails on a real node.
func TestEveryWritablePathIsOnAWritableVolume(t *testing.T) {
	p := render.DefaultPaths()
	control := render.TSIGKey{Name: "rndc-control", Algorithm: "hmac-sha256", Secret: "YmluZC1vcGVyYXRvci10ZXN0LWtleS0zMi1ieXRlcy0hIQ=="}
	meta := func(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: n, Namespace: "ns"} }
	authoritative := func() render.Input {
		c := stsCluster(func(s *bindv1alpha1.BindClusterSpec) { s.Mode = bindv1alpha1.ModeAuthoritative })
		return render.Input{
			Cluster: c, PrimaryAddress: "198.19.10.53", ControlKey: control, Paths: p,
			Keys: map[string]render.TSIGKey{"transfer": {Name: "transfer", Algorithm: "hmac-sha256", Secret: control.Secret}},
			Catalogs: []bindv1alpha1.BindCatalogZone{{ObjectMeta: meta("catalog"), Spec: bindv1alpha1.BindCatalogZoneSpec{
				ZoneName: "catalog.dns.internal", TransferKeyRef: bindv1alpha1.LocalObjectReference{Name: "transfer"},
			}}},
			Zones: []bindv1alpha1.BindZone{{ObjectMeta: meta("partner"), Spec: bindv1alpha1.BindZoneSpec{
				ClusterRef: bindv1alpha1.LocalObjectReference{Name: "dns"}, ZoneName: "partner.example", Type: bindv1alpha1.ZoneSecondary,
				Primaries: []bindv1alpha1.RemoteServer{{Address: "192.0.2.53"}},
			}}},
		}
	}
	resolver := func() render.Input {
		c := stsCluster(func(s *bindv1alpha1.BindClusterSpec) {
			s.Mode = bindv1alpha1.ModeResolver
			s.Recursion = &bindv1alpha1.RecursionSpec{DNSSECValidation: bindv1alpha1.DNSSECValidationAuto}
		})
		return render.Input{Cluster: c, ControlKey: control, Paths: p}
	}
	for name, in := range map[string]render.Input{"authoritative with a catalog and a secondary zone": authoritative(), "validating resolver": resolver()} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			res, err := render.Render(in)
			g.Expect(err).NotTo(HaveOccurred())
			sts := buildStatefulSet(in.Cluster, ClusterOptions{}, p, "h")
			named, agent := sts.Spec.Template.Spec.Containers[0], sts.Spec.Template.Spec.Containers[1]

			for _, conf := range []string{render.FilePrimaryConf, render.FileSecondaryConf} {
				found := map[string]string{}
				for _, m := range namedPathStatement.FindAllStringSubmatch(res.ConfigData[conf], -1) {
					found[m[1]] = m[2]
				}
				// named's compiled-in defaults for these are under /run/named,
				// on the read-only root: the render must set them. (lock-file
				// is off unless named runs with -X; the entrypoint passes
				// none.)
				g.Expect(found).To(HaveKey("directory"), conf)
				g.Expect(found).To(HaveKey("pid-file"), conf)
				g.Expect(found).To(HaveKey("session-keyfile"), conf)
				g.Expect(found).NotTo(HaveKey("lock-file"), conf)
				for _, m := range namedPathStatement.FindAllStringSubmatch(res.ConfigData[conf], -1) {
					target := m[2]
					if !path.IsAbs(target) {
						target = path.Join(found["directory"], target)
					}
					g.Expect(writableVolume(sts, named, target)).To(Succeed(), "%s: %s %q", conf, m[1], m[2])
				}
			}
			entry := res.ConfigData[render.FileEntrypoint]
			g.Expect(entry).To(ContainSubstring(`exec "${NAMED_BIN:-named}" -g -c`))
			g.Expect(entry).NotTo(MatchRegexp(`named.* -u `), "named already runs as the pod's user")
			g.Expect(entry).NotTo(MatchRegexp(`named.* -X `), "no lock file on the read-only root")
			paths := entrypointPath.FindAllStringSubmatch(entry, -1)
			g.Expect(paths).NotTo(BeEmpty())
			for _, m := range paths {
				g.Expect(writableVolume(sts, named, m[2])).To(Succeed(), "entrypoint: %s %q", m[1], m[2])
			}

			// The agent keeps its state in, and writes zone seeds to, the
			// data folder it is given.
			var dataArg string
			for _, a := range agent.Args {
				if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
					dataArg = v
				}
			}
			g.Expect(dataArg).To(Equal(p.DataDir))
			g.Expect(writableVolume(sts, agent, path.Join(dataArg, "agent", "zones.json"))).To(Succeed())
			g.Expect(writableVolume(sts, agent, p.PrimaryZoneFile("", "example.com"))).To(Succeed())
			// ... and reads the keys and config it is given.
			g.Expect(agent.Args).To(ContainElements("--config-dir="+p.ConfigDir, "--keys-dir="+p.KeysDir))
		})
	}
}

// writableVolume checks that target lies under a writable mount of ctr (the
// deepest mount that holds it) backed by an emptyDir or a claim.
func writableVolume(sts *appsv1.StatefulSet, ctr corev1.Container, target string) error {
	pod := sts.Spec.Template.Spec
	var best *corev1.VolumeMount
	for i, m := range ctr.VolumeMounts {
		if target == m.MountPath || strings.HasPrefix(target, strings.TrimSuffix(m.MountPath, "/")+"/") {
			if best == nil || len(m.MountPath) > len(best.MountPath) {
				best = &ctr.VolumeMounts[i]
			}
		}
	}
	if best == nil {
		return fmt.Errorf("%s is on the %s container's read-only root filesystem", target, ctr.Name)
	}
	if best.ReadOnly {
		return fmt.Errorf("%s is on the read-only mount %s", target, best.MountPath)
	}
	if i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == best.Name }); i >= 0 {
		if pod.Volumes[i].EmptyDir == nil && pod.Volumes[i].PersistentVolumeClaim == nil && pod.Volumes[i].Ephemeral == nil {
			return fmt.Errorf("%s is on volume %s, which is not writable storage", target, best.Name)
		}
		return nil
	}
	if slices.ContainsFunc(sts.Spec.VolumeClaimTemplates, func(c corev1.PersistentVolumeClaim) bool { return c.Name == best.Name }) {
		return nil
	}
	return fmt.Errorf("%s is on mount %s, whose volume %s the pod lacks", target, best.MountPath, best.Name)
}

// TestPreStopDrainsThenFlushes runs named's preStop command under a real
// shell with stand-ins for sleep and rndc on PATH: it waits drainSeconds
// first (the endpoint leaves the Services while named still answers), then
// flushes the journals, and fits well inside the grace period.
func TestPreStopDrainsThenFlushes(t *testing.T) {
	g := NewWithT(t)
	spec := podSpecOf(stsCluster(nil))
	var named *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == namedContainer {
			named = &spec.Containers[i]
		}
	}
	g.Expect(named).NotTo(BeNil())
	g.Expect(named.Lifecycle).NotTo(BeNil())
	cmd := named.Lifecycle.PreStop.Exec.Command

	dir := t.TempDir()
	log := path.Join(dir, "calls")
	for _, name := range []string{"sleep", "rndc"} {
		script := fmt.Sprintf("#!/bin/sh\necho %s \"$@\" >> %s\n", name, log)
		g.Expect(os.WriteFile(path.Join(dir, name), []byte(script), 0o755)).To(Succeed())
	}
	run := exec.Command(cmd[0], cmd[1:]...)
	run.Env = []string{"PATH=" + dir}
	out, err := run.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	calls, err := os.ReadFile(log)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Split(strings.TrimSpace(string(calls)), "\n")).To(Equal([]string{
		fmt.Sprintf("sleep %d", drainSeconds),
		"rndc -k " + path.Join(render.DefaultPaths().KeysDir, "control.conf") + " -s 127.0.0.1 sync -clean",
	}))
	g.Expect(int64(drainSeconds)).To(BeNumerically("<", *spec.TerminationGracePeriodSeconds/2))
}
