package clusterpods

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/idlecache"
	"git.unkin.net/unkin/bind-operator/render"
)

// PodEndpoint is how the operator reaches one BIND pod.
type PodEndpoint struct {
	// Pod is the pod's name (status reports it).
	Pod string
	// Primary is true for ordinal 0.
	Primary bool
	// Notify is what the primary's also-notify names for this pod: its pod
	// IP, or "ip:port" when it does not listen on the cluster's DNS port.
	// Runtime data only, never restart-scoped config (docs/behaviours.md,
	// "No pod IP in restart-scoped config").
	Notify string
	// DNSAddr is host:port of the pod's named (SOA queries, lag).
	DNSAddr string
	// AgentAddr is host:port of the pod's agent API.
	AgentAddr string
	// Paths, when set, are this pod's mount points instead of the
	// reconciler's (every pod of a StatefulSet shares them; tests that run
	// several nameds on one machine cannot).
	Paths *render.Paths
}

// PodEndpoints is the seam between the reconcilers and where BIND pods
// are. In production the pods' IPs come from the Pods; the data-plane tests
// map the same roles to nameds and agents they run on loopback.
type PodEndpoints interface {
	// Pods lists the cluster's pods that have an address, the primary
	// first, then the secondaries by name.
	Pods(ctx context.Context, cluster *bindv1alpha1.BindCluster) ([]PodEndpoint, error)
	// Transfer is the stable address (no port) secondaries transfer from
	// and the port it answers on: what restart-scoped config and runtime
	// secondary clauses may name, and where UPDATEs go.
	Transfer(ctx context.Context, cluster *bindv1alpha1.BindCluster) (string, int32, error)
}

// KubePods is the production PodEndpoints: the cluster's Pods (label
// bind.unkin.net/cluster) and the primary Service ClusterIP from the
// cluster's status.
type KubePods struct {
	Client client.Reader
}

// Pods implements PodEndpoints.
func (k KubePods) Pods(ctx context.Context, cluster *bindv1alpha1.BindCluster) ([]PodEndpoint, error) {
	var pods corev1.PodList
	if err := k.Client.List(ctx, &pods, client.InNamespace(cluster.Namespace), client.MatchingLabels{bindv1alpha1.LabelCluster: cluster.Name}); err != nil {
		return nil, err
	}
	agentPort := cluster.Spec.Ports.Agent
	if agentPort == 0 {
		agentPort = bindv1alpha1.DefaultAgentPort
	}
	port := strconv.Itoa(int(DNSPort(cluster)))
	var out []PodEndpoint
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || !ownedByCluster(&p, cluster) {
			continue
		}
		ip := p.Status.PodIP
		out = append(out, PodEndpoint{
			Pod:       p.Name,
			Primary:   p.Name == PrimaryPodName(cluster),
			Notify:    ip,
			DNSAddr:   net.JoinHostPort(ip, port),
			AgentAddr: net.JoinHostPort(ip, strconv.Itoa(int(agentPort))),
		})
	}
	sortEndpoints(out)
	return out, nil
}

// ownedByCluster keeps only the StatefulSet's pods: a stray pod that copies
// the label must not receive NOTIFYs or agent calls.
func ownedByCluster(p *corev1.Pod, cluster *bindv1alpha1.BindCluster) bool {
	if p.Labels[appsv1.StatefulSetPodNameLabel] != p.Name {
		return false
	}
	prefix := StatefulSetName(cluster) + "-"
	_, err := strconv.Atoi(strings.TrimPrefix(p.Name, prefix))
	return strings.HasPrefix(p.Name, prefix) && err == nil
}

// Transfer implements PodEndpoints.
func (k KubePods) Transfer(_ context.Context, cluster *bindv1alpha1.BindCluster) (string, int32, error) {
	if cluster.Status.PrimaryAddress == "" {
		return "", 0, fmt.Errorf("BindCluster %q has no primary address yet", cluster.Name)
	}
	return cluster.Status.PrimaryAddress, ServicePort, nil
}

func sortEndpoints(eps []PodEndpoint) {
	slices.SortFunc(eps, func(a, b PodEndpoint) int {
		if a.Primary != b.Primary {
			if a.Primary {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Pod, b.Pod)
	})
}

// AgentKey names one pod's agent: the key of its cached client and of its
// queue in the zone batcher, so zones of one pod share a queue and
// different clusters never do.
func AgentKey(cluster *bindv1alpha1.BindCluster, addr string) string {
	return cluster.Namespace + "/" + cluster.Name + "|" + addr
}

// AgentClients builds and caches agent clients from the cluster's agent CA
// Secret (<cluster>-agent-ca: CA certificate, operator client certificate
// and key). A renewed certificate replaces the cached client.
type AgentClients struct {
	Client client.Reader

	mu      sync.Mutex // one client per key, even when callers race
	clients *idlecache.Cache[cachedAgent]
}

// AgentClientIdle is how long an agent client may go unused before it is
// closed and forgotten: its pod was replaced (a new IP) or its cluster
// deleted. Every BindZone resync uses a live pod's client far more often.
const AgentClientIdle = 15 * time.Minute

type cachedAgent struct {
	stamp  [32]byte
	client *agent.Client
}

// Get returns a client for the agent at addr in cluster's pods.
func (a *AgentClients) Get(ctx context.Context, cluster *bindv1alpha1.BindCluster, addr string) (*agent.Client, error) {
	var s corev1.Secret
	if err := a.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: AgentCASecretName(cluster)}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the agent CA Secret %q does not exist yet", AgentCASecretName(cluster))
		}
		return nil, err
	}
	ca, cert, key := s.Data[agent.FileCA], s.Data[agent.FileClientCert], s.Data[agent.FileClientKey]
	h := sha256.New()
	for _, b := range [][]byte{ca, cert, key} {
		h.Write([]byte(strconv.Itoa(len(b)) + ":"))
		h.Write(b)
	}
	var stamp [32]byte
	copy(stamp[:], h.Sum(nil))
	id := AgentKey(cluster, addr)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.clients == nil {
		a.clients = idlecache.New(AgentClientIdle, func(c cachedAgent) { c.client.Close() }, nil)
	}
	if c, ok := a.clients.Get(id); ok && c.stamp == stamp {
		return c.client, nil
	}
	c, err := agent.NewClient(agent.ClientConfig{Address: addr, CAPEM: ca, CertPEM: cert, KeyPEM: key})
	if err != nil {
		return nil, fmt.Errorf("agent client for %s: %w", addr, err)
	}
	a.clients.Put(id, cachedAgent{stamp: stamp, client: c})
	return c, nil
}

// JoinHostPort is addr:port, bracketed for IPv6.
func JoinHostPort(addr string, port int32) string {
	return net.JoinHostPort(addr, strconv.Itoa(int(port)))
}
