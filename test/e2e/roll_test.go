package e2e

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestConfigChangeRollsOnceWithoutDowntime (issue 6 d): a change of
// restart-scoped config rolls the cluster exactly once — every pod is
// replaced once (pod UIDs tracked through a watch), the StatefulSet's
// generation goes up by one and the config hash changes — and the query
// Service keeps answering throughout. Two changes are rolled: an edit of the
// BindACL that spec.allowQuery references, then a rotation of the transfer
// key's material (its Secret deleted, the operator generates a new one).
func TestConfigChangeRollsOnceWithoutDowntime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-roll")
	acl := &v1.BindACL{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "clients"},
		Spec:       v1.BindACLSpec{Entries: []v1.AddressMatchElement{{Builtin: "any"}}},
	}
	testkit.Must(t, env.Client.Create(ctx, acl))
	a := authoritative{Namespace: ns, Name: "rolling", Replicas: 3, Catalog: "catalog.rolling.internal", Storage: true,
		Mutate: func(c *v1.BindCluster) { c.Spec.AllowQuery = []v1.AddressMatchElement{{ACLRef: "clients"}} }}
	a.create(ctx, t)
	a.servedByAll(ctx, t, a.Catalog)
	queryIP, err := env.Cluster.ServiceIP(ctx, ns, a.Name)
	testkit.Must(t, err)
	waitSOA(ctx, t, queryIP, a.Catalog, "query Service")

	// 1. The ACL that allow-query names changes (still admitting the
	// clients: the proxy presents them as 198.18.0.1).
	rollOnce(ctx, t, a, queryIP, "BindACL edit", func() {
		testkit.Must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(acl), acl))
		acl.Spec.Entries = []v1.AddressMatchElement{{Address: "192.0.2.1", Negate: true}, {Builtin: "any"}}
		testkit.Must(t, env.Client.Update(ctx, acl))
	})

	// 2. The transfer key's material is rotated.
	oldKey := readTSIGKey(ctx, t, ns, a.transferKey())
	rollOnce(ctx, t, a, queryIP, "TSIG key rotation", func() {
		testkit.Must(t, env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.transferKey() + "-tsig"}}))
	})
	if newKey := readTSIGKey(ctx, t, ns, a.transferKey()); newKey.Secret == oldKey.Secret {
		t.Errorf("the transfer key's material did not change")
	}
	// The secondaries still transfer with the new key: bump the catalog's
	// serial on the primary and see it everywhere.
	bumpCatalogEverywhere(ctx, t, a)
}

// rollOnce applies change and checks that exactly one rolling restart
// follows while a bounded query loop against the query Service sees no
// failure.
func rollOnce(ctx context.Context, t *testing.T, a authoritative, queryIP, what string, change func()) {
	t.Helper()
	r := watchRoll(ctx, t, a, queryIP)
	defer r.stop()
	change()
	r.rolledOnce(ctx, t, what)
}

// rollWatch follows one cluster through a change: its rollout and pods
// before, every UID its pods have had since, and a bounded query loop
// against its query Service.
type rollWatch struct {
	a       authoritative
	before  rollout
	pods    map[string]podState
	seen    func() map[string][]types.UID
	results chan queryStats
	start   time.Time
	stop    func()
}

// watchRoll starts following a before the change is made.
func watchRoll(ctx context.Context, t *testing.T, a authoritative, queryIP string) *rollWatch {
	t.Helper()
	r := &rollWatch{a: a, results: make(chan queryStats, 1)}
	var err error
	r.before, _, err = currentRollout(ctx, a.Namespace, a.Name)
	testkit.Must(t, err)
	r.pods, err = podStates(ctx, a.Namespace, a.Name)
	testkit.Must(t, err)
	if len(r.pods) != int(a.Replicas) {
		t.Fatalf("%s: want %d pods before the change, got %s", a.Name, a.Replicas, describePods(r.pods))
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	r.seen = watchPodUIDs(watchCtx, t, a.Namespace, a.Name)
	loopCtx, stopLoop := context.WithCancel(ctx)
	go func() {
		r.results <- queryLoop(loopCtx, queryIP, a.Catalog, 100*time.Millisecond, 1800, 180*time.Second)
	}()
	r.stop = func() { stopLoop(); stopWatch() }
	r.start = time.Now()
	return r
}

// rolledOnce waits until the change has rolled the cluster and checks
// that it rolled exactly once — every pod replaced once, the StatefulSet's
// generation up by one, the config hash changed — and that the query
// Service kept answering.
func (r *rollWatch) rolledOnce(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	a, before, pods := r.a, r.before, r.pods
	what = a.Name + ": " + what
	// Wait for the roll to complete: a new generation fully rolled out,
	// every pod replaced and ready.
	NewWithT(t).Eventually(func() error {
		now, s, err := currentRollout(ctx, a.Namespace, a.Name)
		if err != nil {
			return err
		}
		sts := fmt.Sprintf("generation %d (observed %d), hash %s, updated %d, ready %d, revisions %s/%s",
			s.Generation, s.Status.ObservedGeneration, shortHash(now.Hash), s.Status.UpdatedReplicas, s.Status.ReadyReplicas, s.Status.CurrentRevision, s.Status.UpdateRevision)
		if now.Hash == before.Hash || s.Status.ObservedGeneration != s.Generation || s.Status.UpdatedReplicas != a.Replicas ||
			s.Status.ReadyReplicas != a.Replicas || s.Status.CurrentRevision != s.Status.UpdateRevision {
			return errors.New(sts)
		}
		cur, err := podStates(ctx, a.Namespace, a.Name)
		if err != nil {
			return err
		}
		if len(cur) != int(a.Replicas) {
			return fmt.Errorf("%s; pods %s", sts, describePods(cur))
		}
		for name, p := range cur {
			if p.UID == pods[name].UID {
				return fmt.Errorf("%s; %s not replaced yet", sts, name)
			}
		}
		return nil
	}).WithContext(ctx).WithTimeout(4*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "%s: the roll did not complete", what)
	rolled := time.Since(r.start)
	waitClusterReady(ctx, t, a.Namespace, a.Name, a.Replicas)
	// Hold on a little: a second roll would start right after the first.
	NewWithT(t).Consistently(func() (int64, error) {
		_, s, err := currentRollout(ctx, a.Namespace, a.Name)
		if err != nil {
			return 0, err
		}
		return s.Generation, nil
	}).WithContext(ctx).WithTimeout(8*time.Second).Should(Equal(before.Generation+1), "%s: a second roll followed the first", what)
	r.stop()
	stats := <-r.results

	after, _, err := currentRollout(ctx, a.Namespace, a.Name)
	testkit.Must(t, err)
	if after.Generation != before.Generation+1 {
		t.Errorf("%s: StatefulSet generation %d -> %d, want exactly +1 (one roll)", what, before.Generation, after.Generation)
	}
	if after.Hash == before.Hash {
		t.Errorf("%s: the config hash did not change (%s)", what, shortHash(after.Hash))
	}
	uids := r.seen()
	var perPod []string
	for name, p := range pods {
		got := uids[name]
		perPod = append(perPod, fmt.Sprintf("%s: %d", name, len(got)))
		if len(got) != 2 || got[0] != p.UID {
			t.Errorf("%s: pod %s had incarnations %v, want exactly two (the old %s and one replacement)", what, name, got, p.UID)
		}
	}
	sort.Strings(perPod)
	t.Logf("%s: one roll in %s (generation %d -> %d, hash %s -> %s, incarnations per pod %s); query Service: %s",
		what, rolled.Round(time.Millisecond), before.Generation, after.Generation, shortHash(before.Hash), shortHash(after.Hash), strings.Join(perPod, ", "), stats)
	if stats.failed > 0 {
		t.Errorf("%s: %d of %d queries to the query Service failed (even after one TCP retry): %v", what, stats.failed, stats.sent, stats.errors)
	}
	if stats.sent < 20 {
		t.Errorf("%s: the query loop sent only %d queries", what, stats.sent)
	}
}

// watchPodUIDs records, per pod name, every UID the cluster's pods had in
// order, through a watch (re-established when the server closes it). The
// returned function reads the record.
func watchPodUIDs(ctx context.Context, t *testing.T, ns, cluster string) func() map[string][]types.UID {
	t.Helper()
	var mu sync.Mutex
	uids := map[string][]types.UID{}
	add := func(p *corev1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		l := uids[p.Name]
		if len(l) == 0 || l[len(l)-1] != p.UID {
			uids[p.Name] = append(l, p.UID)
		}
	}
	pods := env.Cluster.Client().CoreV1().Pods(ns)
	sel := v1.LabelCluster + "=" + cluster
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
	testkit.Must(t, err)
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp) })
	for i := range list.Items {
		add(&list.Items[i])
	}
	rv := list.ResourceVersion
	go func() {
		for ctx.Err() == nil {
			w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type == watch.Error {
					continue
				}
				rv = p.ResourceVersion
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					add(p)
				}
			}
			w.Stop()
		}
	}()
	return func() map[string][]types.UID {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]types.UID{}
		for k, v := range uids {
			out[k] = append([]types.UID(nil), v...)
		}
		return out
	}
}

type queryStats struct {
	sent, retried, failed int
	retries, errors       []string
	elapsed               time.Duration
}

func (s queryStats) String() string {
	out := fmt.Sprintf("%d queries over %s, %d retried over TCP after a UDP failure, %d failed", s.sent, s.elapsed.Round(time.Millisecond), s.retried, s.failed)
	if len(s.retries) > 0 {
		out += fmt.Sprintf(" (UDP failures: %s)", strings.Join(s.retries, "; "))
	}
	return out
}

// queryLoop asks server for zone's SOA every interval until ctx ends, at
// most max queries and for at most limit. A query that fails over UDP is
// retried once over TCP; only a query that fails both ways counts as failed.
func queryLoop(ctx context.Context, server, zone string, interval time.Duration, maxQueries int, limit time.Duration) queryStats {
	return probeLoop(ctx, soaProbe(server, zone), interval, maxQueries, limit)
}

// dnsProbe sends one query, over TCP when tcp is set, and says what was
// wrong with the answer.
type dnsProbe func(tcp bool) error

// soaProbe wants an authoritative answer with zone's SOA from server.
func soaProbe(server, zone string) dnsProbe {
	return func(tcp bool) error {
		dig := localcluster.Dig
		if tcp {
			dig = localcluster.DigTCP
		}
		in, err := dig(server, zone, dns.TypeSOA)
		if err != nil {
			return err
		}
		if in.Rcode != dns.RcodeSuccess || !in.Authoritative || len(in.Answer) != 1 {
			return fmt.Errorf("rcode %s aa=%v answers=%d", dns.RcodeToString[in.Rcode], in.Authoritative, len(in.Answer))
		}
		return nil
	}
}

// probeLoop runs p every interval until ctx ends, at most maxQueries
// times and for at most limit. A query that fails over UDP is retried once
// over TCP; only a query that fails both ways counts as failed.
func probeLoop(ctx context.Context, p dnsProbe, interval time.Duration, maxQueries int, limit time.Duration) queryStats {
	var s queryStats
	start := time.Now()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for s.sent < maxQueries && time.Since(start) < limit {
		select {
		case <-ctx.Done():
			s.elapsed = time.Since(start)
			return s
		case <-tick.C:
		}
		s.sent++
		if err := p(false); err != nil {
			s.retried++
			if len(s.retries) < 5 {
				s.retries = append(s.retries, fmt.Sprintf("at %s: %v", time.Since(start).Round(time.Millisecond), err))
			}
			if err2 := p(true); err2 != nil {
				s.failed++
				if len(s.errors) < 10 {
					s.errors = append(s.errors, fmt.Sprintf("%s: udp: %v; tcp: %v", time.Since(start).Round(time.Millisecond), err, err2))
				}
			}
		}
	}
	s.elapsed = time.Since(start)
	return s
}

// bumpCatalogEverywhere raises the catalog zone's serial on the primary pod
// with an UPDATE signed with the transfer key (read from its Secret), tells
// the secondaries with a NOTIFY signed with the same key (what the operator
// does after its own catalog edits: the config may not name pod IPs), and
// waits until every secondary serves the new serial — which they can only
// get by a keyed transfer from the primary Service.
func bumpCatalogEverywhere(ctx context.Context, t *testing.T, a authoritative) {
	t.Helper()
	key := readTSIGKey(ctx, t, a.Namespace, a.transferKey())
	ips := podIPs(ctx, t, a.Namespace, a.Name, a.Replicas)
	primary := ips[0]
	in, err := localcluster.DigTCP(primary, a.Catalog, dns.TypeSOA)
	testkit.Must(t, err)
	if len(in.Answer) != 1 {
		t.Fatalf("primary %s: no SOA for %s (rcode %s)", primary, a.Catalog, dns.RcodeToString[in.Rcode])
	}
	soa := dns.Copy(in.Answer[0]).(*dns.SOA)
	want := soa.Serial + 1000
	soa.Serial = want
	upd := new(dns.Msg)
	upd.SetUpdate(dns.Fqdn(a.Catalog))
	upd.Insert([]dns.RR{soa})
	r, err := exchangeSigned("tcp", primary, upd, key)
	if err != nil || r.Rcode != dns.RcodeSuccess {
		t.Fatalf("signed UPDATE of %s's SOA on the primary %s: err=%v reply=%v", a.Catalog, primary, err, r)
	}
	start := time.Now()
	waitSerial(ctx, t, primary, a.Catalog, "primary", want)
	primarySvc, err := env.Cluster.ServiceIP(ctx, a.Namespace, a.Name+"-primary")
	testkit.Must(t, err)
	waitSerial(ctx, t, primarySvc, a.Catalog, "primary Service", want)
	for i, ip := range ips[1:] {
		n := new(dns.Msg)
		n.SetNotify(dns.Fqdn(a.Catalog))
		r, err := exchangeSigned("udp", ip, n, key)
		if err != nil || r.Rcode != dns.RcodeSuccess {
			t.Fatalf("signed NOTIFY to secondary %s-%d (%s): err=%v reply=%v", a.Name, i+1, ip, err, r)
		}
	}
	for i, ip := range ips[1:] {
		waitSerial(ctx, t, ip, a.Catalog, fmt.Sprintf("secondary %s-%d", a.Name, i+1), want)
	}
	t.Logf("catalog %s serial %d (signed UPDATE on the primary) served by every secondary %s after the signed NOTIFY", a.Catalog, want, time.Since(start).Round(time.Millisecond))
}
