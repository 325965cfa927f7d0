package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
)

// deleteAllPods deletes every pod with a short grace period and waits
// until the kubelet has torn them down, so the CNI plugin releases their
// addresses and nothing is left for the sweep but the components.
func (c *Cluster) deleteAllPods(ctx context.Context, timeout time.Duration) error {
	pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		_ = c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](2)})
	}
	return c.waitUntil(ctx, "every pod to be gone", timeout, func() (bool, error) {
		pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 0, fmt.Errorf("%d pods left", len(pods.Items))
	})
}

// WaitPodReady waits until the pod exists and is Ready; on timeout the
// error describes its containers and events.
func (c *Cluster) WaitPodReady(ctx context.Context, namespace, name string, timeout time.Duration) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := c.waitUntil(ctx, "pod "+namespace+"/"+name+" to be Ready", timeout, func() (bool, error) {
		p, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return PodReady(p), errNotYet
	}, c.kubelet)
	if err != nil {
		return pod, fmt.Errorf("%w\n%s", err, c.DescribePod(ctx, namespace, name))
	}
	return pod, nil
}

// PodReady tells whether the pod's Ready condition is true.
func PodReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DescribePod summarises a pod for a failure message: phase, each
// container's state, and the pod's events.
func (c *Cluster) DescribePod(ctx context.Context, namespace, name string) string {
	p, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("pod %s/%s: %v", namespace, name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s/%s: phase %s ip %s node %q\n", namespace, name, p.Status.Phase, p.Status.PodIP, p.Spec.NodeName)
	for _, st := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		fmt.Fprintf(&b, "  container %s ready=%v restarts=%d", st.Name, st.Ready, st.RestartCount)
		switch {
		case st.State.Waiting != nil:
			fmt.Fprintf(&b, " waiting %s: %s", st.State.Waiting.Reason, st.State.Waiting.Message)
		case st.State.Terminated != nil:
			fmt.Fprintf(&b, " terminated %s (exit %d): %s", st.State.Terminated.Reason, st.State.Terminated.ExitCode, st.State.Terminated.Message)
		case st.State.Running != nil:
			fmt.Fprint(&b, " running")
		}
		if t := st.LastTerminationState.Terminated; t != nil {
			fmt.Fprintf(&b, " (last: %s exit %d)", t.Reason, t.ExitCode)
		}
		b.WriteString("\n")
	}
	events, err := c.client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "  event %s %s: %s\n", e.Type, e.Reason, e.Message)
		}
	}
	return b.String()
}

// Logs returns a container's log through the API server and the kubelet,
// as `kubectl logs` reads it (previous: the last terminated instance).
func (c *Cluster) Logs(ctx context.Context, namespace, pod, container string, previous bool) (string, error) {
	b, err := c.client.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous}).DoRaw(ctx)
	return string(b), err
}

// PodIP returns a pod's IP address.
func (c *Cluster) PodIP(ctx context.Context, namespace, name string) (string, error) {
	p, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if p.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s/%s has no IP yet", namespace, name)
	}
	return p.Status.PodIP, nil
}

// ServiceIP returns a Service's ClusterIP.
func (c *Cluster) ServiceIP(ctx context.Context, namespace, name string) (string, error) {
	s, err := c.client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return s.Spec.ClusterIP, nil
}

// ContainerPIDs returns the host PIDs of the processes in each of the
// pod's cgroups (containers and sandbox), read from the kubelet's cgroup
// tree: proof from outside the API that a pod's processes are gone.
func (c *Cluster) ContainerPIDs(ctx context.Context, namespace, name string) ([]int, error) {
	p, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return PodUIDPIDs(string(p.UID)), nil
}

// PodUIDPIDs returns the PIDs in the cgroups of the pod with this UID
// (the pid hierarchy; the kubelet names pod cgroups pod<uid>).
func PodUIDPIDs(uid string) []int {
	var pids []int
	root := filepath.Join("/sys/fs/cgroup/pids", cgroupRoot)
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || !strings.Contains(p, "pod"+uid) {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}
