package localcluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func everything() labels.Selector { return labels.Everything() }

// node is the kubelet and the scheduler of the single node.
type node struct {
	c            *Cluster
	name         string
	factory      informers.SharedInformerFactory
	podLister    listerscorev1.PodLister
	cmLister     listerscorev1.ConfigMapLister
	secretLister listerscorev1.SecretLister
	pvcLister    listerscorev1.PersistentVolumeClaimLister

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	kick    chan struct{}
	ctx     context.Context
	wg      *sync.WaitGroup
}

func newNode(c *Cluster) *node {
	f := informers.NewSharedInformerFactory(c.client, 0)
	return &node{
		c: c, name: c.opts.NodeName, factory: f,
		podLister:    f.Core().V1().Pods().Lister(),
		cmLister:     f.Core().V1().ConfigMaps().Lister(),
		secretLister: f.Core().V1().Secrets().Lister(),
		pvcLister:    f.Core().V1().PersistentVolumeClaims().Lister(),
		workers:      map[types.UID]*podWorker{},
		kick:         make(chan struct{}, 1),
	}
}

func (n *node) start(ctx context.Context, wg *sync.WaitGroup) error {
	n.ctx, n.wg = ctx, wg
	if err := n.register(ctx); err != nil {
		return fmt.Errorf("register node: %w", err)
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { n.poke() },
		UpdateFunc: func(any, any) { n.poke() },
		DeleteFunc: func(any) { n.poke() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		n.factory.Core().V1().Pods().Informer(),
		n.factory.Core().V1().ConfigMaps().Informer(),
		n.factory.Core().V1().Secrets().Informer(),
		n.factory.Core().V1().PersistentVolumeClaims().Informer(),
	} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	// The proxy's informers come from the same factory; create them before Start.
	n.factory.Core().V1().Services().Informer()
	n.factory.Discovery().V1().EndpointSlices().Informer()
	n.factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for typ, ok := range n.factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			return fmt.Errorf("informer cache for %v did not sync", typ)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.loop(ctx)
	}()
	return nil
}

func (n *node) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// register creates the Node: Ready, with room for many pods and the pod
// range as its podCIDR.
func (n *node) register(ctx context.Context) error {
	nd := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{
			corev1.LabelHostname: n.name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		}},
		Spec: corev1.NodeSpec{PodCIDR: PodCIDR, PodCIDRs: []string{PodCIDR}},
	}
	cs := n.c.client.CoreV1()
	created, err := cs.Nodes().Create(ctx, nd, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("64"),
		corev1.ResourceMemory:           resource.MustParse("256Gi"),
		corev1.ResourcePods:             resource.MustParse("250"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	now := metav1.Now()
	created.Status = corev1.NodeStatus{
		Capacity: res, Allocatable: res,
		Phase: corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "localcluster node agent is ready", LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: gatewayIP.String()},
			{Type: corev1.NodeHostName, Address: n.name},
		},
		NodeInfo: corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64",
			KubeletVersion: "localcluster", ContainerRuntimeVersion: "localcluster://processes"},
	}
	_, err = cs.Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

func (n *node) loop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-n.kick:
		}
		n.sync(ctx)
	}
}

// sync is level-based: bind unscheduled pods, start a worker for every new
// pod of this node, stop workers whose pod is gone, bind claims.
func (n *node) sync(ctx context.Context) {
	n.bindClaims(ctx)
	pods, err := n.podLister.List(everything())
	if err != nil {
		return
	}
	seen := map[types.UID]bool{}
	for _, p := range pods {
		seen[p.UID] = true
		if p.Spec.NodeName == "" {
			if p.DeletionTimestamp == nil && (p.Spec.SchedulerName == "" || p.Spec.SchedulerName == corev1.DefaultSchedulerName) {
				n.bind(ctx, p)
			}
			continue
		}
		if p.Spec.NodeName != n.name {
			continue
		}
		n.mu.Lock()
		_, running := n.workers[p.UID]
		n.mu.Unlock()
		if running {
			continue
		}
		if p.DeletionTimestamp != nil {
			// Nothing runs for it: finish the deletion like the kubelet.
			_ = n.c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
				GracePeriodSeconds: ptrInt64(0), Preconditions: &metav1.Preconditions{UID: &p.UID}})
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		n.startWorker(p)
	}
	n.mu.Lock()
	for uid, w := range n.workers {
		if !seen[uid] {
			w.cancel() // the pod object is gone: kill without ceremony
		}
	}
	n.mu.Unlock()
}

func ptrInt64(v int64) *int64 { return &v }

func (n *node) bind(ctx context.Context, p *corev1.Pod) {
	b := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: n.name},
	}
	err := n.c.client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		n.c.logf("bind pod %s/%s: %v", p.Namespace, p.Name, err)
		return
	}
	if err == nil {
		n.event(p, corev1.EventTypeNormal, "Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", p.Namespace, p.Name, n.name))
	}
}

func (n *node) startWorker(p *corev1.Pod) {
	w := newPodWorker(n, p)
	n.mu.Lock()
	n.workers[p.UID] = w
	n.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer func() {
			n.mu.Lock()
			delete(n.workers, p.UID)
			n.mu.Unlock()
			n.poke()
		}()
		w.run()
	}()
}

func (n *node) containerPIDs(namespace, pod string) map[string]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]int{}
	for _, w := range n.workers {
		if w.namespace == namespace && w.name == pod {
			for k, v := range w.pids() {
				out[k] = v
			}
		}
	}
	return out
}

// event records a core/v1 Event about a pod (best effort).
func (n *node) event(p *corev1.Pod, typ, reason, msg string) {
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace,
			Name: p.Name, UID: p.UID},
		Reason: reason, Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: "localcluster-node", Host: n.name},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = n.c.client.CoreV1().Events(p.Namespace).Create(ctx, ev, metav1.CreateOptions{})
}

func labelSelector(k, v string) labels.Selector { return labels.SelectorFromSet(labels.Set{k: v}) }
