package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// startProbes runs the readiness and liveness probes of a started container
// until ctx ends (the container exits or the pod stops). Startup probes are
// not run.
func (w *podWorker) startProbes(ctx context.Context, p *corev1.Pod, c *container) {
	run := func(pr *corev1.Probe, kind string, onResult func(ok bool, succ, fail int32)) {
		initial := time.Duration(pr.InitialDelaySeconds) * time.Second
		period := time.Duration(pr.PeriodSeconds) * time.Second
		if period <= 0 {
			period = 10 * time.Second
		}
		go func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(initial):
			}
			var succ, fail int32
			lastOK := true
			for {
				ok, msg := w.probe(ctx, c, pr)
				if ctx.Err() != nil {
					return
				}
				if ok {
					succ, fail = succ+1, 0
				} else {
					succ, fail = 0, fail+1
					if lastOK {
						w.node.event(p, corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed for container %s: %s", kind, c.spec.Name, msg))
					}
				}
				lastOK = ok
				onResult(ok, succ, fail)
				w.poke()
				select {
				case <-ctx.Done():
					return
				case <-time.After(period):
				}
			}
		}()
	}
	threshold := func(v, def int32) int32 {
		if v <= 0 {
			return def
		}
		return v
	}
	if pr := c.spec.ReadinessProbe; pr != nil {
		run(pr, "Readiness", func(ok bool, succ, fail int32) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if ok && succ >= threshold(pr.SuccessThreshold, 1) {
				c.ready = true
			}
			if !ok && fail >= threshold(pr.FailureThreshold, 3) {
				c.ready = false
			}
		})
	}
	if pr := c.spec.LivenessProbe; pr != nil {
		run(pr, "Liveness", func(ok bool, succ, fail int32) {
			if !ok && fail >= threshold(pr.FailureThreshold, 3) {
				w.mu.Lock()
				c.liveFailed = true
				w.mu.Unlock()
			}
		})
	}
}

// probe runs one probe: exec inside the container's namespaces, HTTP GET
// and TCP connect to the pod IP from the host (like the kubelet).
func (w *podWorker) probe(ctx context.Context, c *container, pr *corev1.Probe) (bool, string) {
	timeout := time.Duration(pr.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ip := w.ip()
	switch {
	case pr.Exec != nil:
		if err := w.execIn(ctx, c, pr.Exec.Command); err != nil {
			return false, fmt.Sprintf("exec %q: %v", pr.Exec.Command, err)
		}
		return true, ""
	case pr.HTTPGet != nil:
		port, err := resolvePort(pr.HTTPGet.Port, c.spec)
		if err != nil {
			return false, err.Error()
		}
		scheme := "http"
		if pr.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(ip, strconv.Itoa(port)), pr.HTTPGet.Path)
		return httpProbe(ctx, url, pr.HTTPGet.HTTPHeaders)
	case pr.TCPSocket != nil:
		port, err := resolvePort(pr.TCPSocket.Port, c.spec)
		if err != nil {
			return false, err.Error()
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			return false, err.Error()
		}
		_ = conn.Close()
		return true, ""
	}
	return false, "probe kind not supported by localcluster (exec, httpGet, tcpSocket are)"
}

func httpProbe(ctx context.Context, url string, headers []corev1.HTTPHeader) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	for _, h := range headers {
		req.Header.Add(h.Name, h.Value)
	}
	cl := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet does not verify probes either
		Proxy:             nil,
		DisableKeepAlives: true,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		return false, err.Error()
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, ""
	}
	return false, fmt.Sprintf("GET %s: HTTP %d", url, resp.StatusCode)
}

// resolvePort turns a probe port (number or container port name) into a number.
func resolvePort(p intstr.IntOrString, s corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range s.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("container %s has no port named %q", s.Name, p.StrVal)
}

func now() metav1.Time { return metav1.Unix(time.Now().Unix(), 0) }

// pushStatus writes the pod's status when it differs from the API's.
func (w *podWorker) pushStatus(p *corev1.Pod) {
	st := w.status(p)
	if equality.Semantic.DeepEqual(p.Status, st) {
		return
	}
	up := p.DeepCopy()
	up.Status = st
	ctx, cancel := context.WithTimeout(w.ctx, 5*time.Second)
	defer cancel()
	// Conflicts retry on the next tick from a fresher cache.
	_, _ = w.node.c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, up, metav1.UpdateOptions{})
}

func (w *podWorker) status(p *corev1.Pod) corev1.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	old := p.Status
	st := *old.DeepCopy()
	st.HostIP, st.HostIPs = gatewayIP.String(), []corev1.HostIP{{IP: gatewayIP.String()}}
	if w.podIP.IsValid() {
		st.PodIP, st.PodIPs = w.podIP.String(), []corev1.PodIP{{IP: w.podIP.String()}}
	}
	if st.StartTime == nil {
		t := w.startTime
		st.StartTime = &t
	}
	cs := func(c *container) corev1.ContainerStatus {
		s := corev1.ContainerStatus{Name: c.spec.Name, Image: c.spec.Image, ImageID: "localcluster://" + c.argv0,
			RestartCount: c.restartCount, Ready: c.running && c.ready, Started: ptrBool(c.running)}
		if c.everStarted {
			s.ContainerID = c.containerID(w)
		}
		switch {
		case c.running:
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: c.startedAt}
		case c.done && c.lastTerm != nil:
			t := *c.lastTerm
			s.State.Terminated = &t
		default:
			reason, msg := c.waitReason, c.waitMsg
			if reason == "" {
				reason, msg = "ContainerCreating", w.setupErr
				if w.setupWhy != "" && w.setupWhy != "ContainerCreating" {
					reason = w.setupWhy
				}
				if c.isInit || w.initDone {
				} else {
					reason, msg = "PodInitializing", ""
				}
			}
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
		}
		if c.lastTerm != nil && !(c.done && s.State.Terminated != nil) {
			t := *c.lastTerm
			s.LastTerminationState.Terminated = &t
		}
		return s
	}
	st.InitContainerStatuses = nil
	for _, c := range w.init {
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs(c))
	}
	st.ContainerStatuses = nil
	allReady, anyStarted, allDone, anyFailed := true, false, true, false
	for _, c := range w.containers {
		s := cs(c)
		st.ContainerStatuses = append(st.ContainerStatuses, s)
		allReady = allReady && s.Ready
		anyStarted = anyStarted || c.everStarted
		allDone = allDone && c.done
		anyFailed = anyFailed || (c.done && c.lastTerm != nil && c.lastTerm.ExitCode != 0)
	}
	switch {
	case len(w.containers) > 0 && allDone && anyFailed:
		st.Phase = corev1.PodFailed
	case len(w.containers) > 0 && allDone:
		st.Phase = corev1.PodSucceeded
	case anyStarted:
		st.Phase = corev1.PodRunning
	default:
		st.Phase = corev1.PodPending
	}
	cond := func(t corev1.PodConditionType, ok bool) {
		status := corev1.ConditionFalse
		if ok {
			status = corev1.ConditionTrue
		}
		for i := range st.Conditions {
			if st.Conditions[i].Type == t {
				if st.Conditions[i].Status != status {
					st.Conditions[i].Status, st.Conditions[i].LastTransitionTime = status, now()
				}
				st.Conditions[i].Reason, st.Conditions[i].Message = "", ""
				return
			}
		}
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: status, LastTransitionTime: now()})
	}
	cond(corev1.PodScheduled, true)
	cond(corev1.PodReadyToStartContainers, w.netReady)
	cond(corev1.PodInitialized, w.initDone)
	cond(corev1.ContainersReady, allReady && !allDone)
	cond(corev1.PodReady, allReady && !allDone)
	return st
}

func ptrBool(b bool) *bool { return &b }
