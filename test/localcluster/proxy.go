package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/informers"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	listersdiscoveryv1 "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// proxy makes Service ClusterIPs reachable from the host and from the pods:
// each ClusterIP is a /32 on the bridge blc-br0, and a userspace
// listener per ClusterIP:port (UDP and TCP) forwards to the ready endpoints
// of the Service's EndpointSlices. Backends see the gateway (198.18.0.1)
// as the source, not the client (kube-proxy would keep the client address).
type proxy struct {
	c         *Cluster
	svcLister listerscorev1.ServiceLister
	epsLister listersdiscoveryv1.EndpointSliceLister
	kick      chan struct{}

	mu        sync.Mutex
	listeners map[string]*listener // "udp/ip:port"
	addrs     map[netip.Addr]bool
}

type listener struct {
	key      string
	backends atomic.Pointer[[]string]
	rr       atomic.Uint32
	closeFn  func()
}

func newProxy(c *Cluster) *proxy {
	return &proxy{c: c, kick: make(chan struct{}, 1), listeners: map[string]*listener{}, addrs: map[netip.Addr]bool{}}
}

func (p *proxy) start(ctx context.Context, wg *sync.WaitGroup, f informers.SharedInformerFactory) {
	p.svcLister = f.Core().V1().Services().Lister()
	p.epsLister = f.Discovery().V1().EndpointSlices().Lister()
	h := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { p.poke() }, UpdateFunc: func(any, any) { p.poke() }, DeleteFunc: func(any) { p.poke() },
	}
	_, _ = f.Core().V1().Services().Informer().AddEventHandler(h)
	_, _ = f.Discovery().V1().EndpointSlices().Informer().AddEventHandler(h)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer p.closeAll()
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			p.sync(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-p.kick:
			}
		}
	}()
}

func (p *proxy) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// sync reconciles listeners and addresses with Services and EndpointSlices.
func (p *proxy) sync(ctx context.Context) {
	svcs, err := p.svcLister.List(everything())
	if err != nil {
		return
	}
	want := map[string][]string{}
	for _, s := range svcs {
		for _, ipStr := range s.Spec.ClusterIPs {
			ip, err := netip.ParseAddr(ipStr)
			if err != nil || !ip.Is4() || !serviceCIDR.Contains(ip) {
				continue // None (headless) or outside the local range
			}
			for _, sp := range s.Spec.Ports {
				proto := "tcp"
				switch sp.Protocol {
				case corev1.ProtocolUDP:
					proto = "udp"
				case corev1.ProtocolSCTP:
					continue
				}
				key := proto + "/" + netip.AddrPortFrom(ip, uint16(sp.Port)).String()
				want[key] = p.backends(s, sp)
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, l := range p.listeners {
		if _, ok := want[key]; !ok {
			l.closeFn()
			delete(p.listeners, key)
		}
	}
	for key, be := range want {
		l, ok := p.listeners[key]
		if !ok {
			var err error
			if l, err = p.listen(ctx, key); err != nil {
				p.c.logf("proxy %s: %v", key, err)
				continue
			}
			p.listeners[key] = l
		}
		be := be
		l.backends.Store(&be)
	}
	// Addresses no listener uses any more go away.
	used := map[netip.Addr]bool{}
	for key := range p.listeners {
		used[keyAddr(key)] = true
	}
	for a := range p.addrs {
		if !used[a] {
			_ = run(ctx, "ip", "addr", "del", a.String()+"/32", "dev", svcLink)
			delete(p.addrs, a)
		}
	}
}

func keyAddr(key string) netip.Addr {
	ap, _ := netip.ParseAddrPort(key[4:])
	return ap.Addr()
}

// backends are the ready endpoint addresses of one Service port.
func (p *proxy) backends(s *corev1.Service, sp corev1.ServicePort) []string {
	slices, err := p.epsLister.EndpointSlices(s.Namespace).List(labelSelector(discoveryv1.LabelServiceName, s.Name))
	if err != nil {
		return nil
	}
	var out []string
	for _, es := range slices {
		if es.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, ep := range es.Ports {
			if ptrDeref(ep.Name) != sp.Name || ep.Port == nil || (ep.Protocol != nil && *ep.Protocol != sp.Protocol) {
				continue
			}
			for _, e := range es.Endpoints {
				if e.Conditions.Ready != nil && !*e.Conditions.Ready {
					continue
				}
				for _, a := range e.Addresses {
					if ip, err := netip.ParseAddr(a); err == nil && podCIDR.Contains(ip) {
						out = append(out, net.JoinHostPort(a, strconv.Itoa(int(*ep.Port))))
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func (l *listener) pick() (string, []string) {
	be := l.backends.Load()
	if be == nil || len(*be) == 0 {
		return "", nil
	}
	n := l.rr.Add(1)
	return (*be)[int(n)%len(*be)], *be
}

func (p *proxy) listen(ctx context.Context, key string) (*listener, error) {
	addr := keyAddr(key)
	if !p.addrs[addr] {
		if err := run(ctx, "ip", "addr", "add", addr.String()+"/32", "dev", svcLink); err != nil {
			return nil, err
		}
		p.addrs[addr] = true
	}
	l := &listener{key: key}
	hostPort := key[4:]
	if key[:3] == "udp" {
		ua, _ := net.ResolveUDPAddr("udp", hostPort)
		conn, err := net.ListenUDP("udp4", ua)
		if err != nil {
			return nil, err
		}
		l.closeFn = func() { _ = conn.Close() }
		go l.serveUDP(conn)
		return l, nil
	}
	ln, err := net.Listen("tcp4", hostPort)
	if err != nil {
		return nil, err
	}
	l.closeFn = func() { _ = ln.Close() }
	go l.serveTCP(ln)
	return l, nil
}

const (
	udpIdle        = 30 * time.Second
	maxUDPSessions = 4096
	maxTCPConns    = 1024
)

// serveUDP keeps one upstream socket per client address, so replies go back
// to the right client; idle sessions end after udpIdle. A session whose
// backend is no longer a ready endpoint is dropped at the client's next
// datagram and a new backend picked (kube-proxy likewise flushes the
// conntrack entries of removed UDP endpoints): otherwise a client that
// reuses a source port would keep talking to a pod that is gone.
func (l *listener) serveUDP(conn *net.UDPConn) {
	type session struct {
		up      *net.UDPConn
		backend string
	}
	var mu sync.Mutex
	sessions := map[netip.AddrPort]*session{}
	buf := make([]byte, 65535)
	for {
		n, src, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				mu.Lock()
				for _, s := range sessions {
					_ = s.up.Close()
				}
				mu.Unlock()
				return
			}
			continue
		}
		mu.Lock()
		sess, ok := sessions[src]
		if ok {
			if be := l.backends.Load(); be == nil || !slices.Contains(*be, sess.backend) {
				_ = sess.up.Close()
				delete(sessions, src)
				sess, ok = nil, false
			}
		}
		if !ok && len(sessions) < maxUDPSessions {
			be, _ := l.pick()
			if be == "" {
				mu.Unlock()
				continue // no ready endpoint: drop, like a Service without endpoints
			}
			ba, err := net.ResolveUDPAddr("udp", be)
			var up *net.UDPConn
			if err == nil {
				up, err = net.DialUDP("udp4", nil, ba)
			}
			if err != nil {
				mu.Unlock()
				continue
			}
			sess = &session{up: up, backend: be}
			sessions[src] = sess
			go func(src netip.AddrPort, sess *session) {
				b := make([]byte, 65535)
				for {
					_ = sess.up.SetReadDeadline(time.Now().Add(udpIdle))
					m, err := sess.up.Read(b)
					if err != nil {
						break
					}
					_, _ = conn.WriteToUDPAddrPort(b[:m], src)
				}
				mu.Lock()
				if sessions[src] == sess {
					delete(sessions, src)
				}
				mu.Unlock()
				_ = sess.up.Close()
			}(src, sess)
		}
		mu.Unlock()
		if sess != nil {
			_, _ = sess.up.Write(buf[:n])
		}
	}
}

func (l *listener) serveTCP(ln net.Listener) {
	var active atomic.Int32
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if active.Load() >= maxTCPConns {
			_ = c.Close()
			continue
		}
		active.Add(1)
		go func() {
			defer active.Add(-1)
			defer c.Close()
			up, err := l.dialBackend()
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(up, c)
			go pipe(c, up)
			<-done
			select {
			case <-done:
			case <-time.After(30 * time.Second):
			}
		}()
	}
}

// dialBackend tries each ready endpoint once, starting round-robin.
func (l *listener) dialBackend() (net.Conn, error) {
	first, all := l.pick()
	if first == "" {
		return nil, fmt.Errorf("no ready endpoints")
	}
	start := sort.SearchStrings(all, first)
	var last error
	for i := 0; i < len(all); i++ {
		be := all[(start+i)%len(all)]
		c, err := net.DialTimeout("tcp4", be, 2*time.Second)
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}

func (p *proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, l := range p.listeners {
		l.closeFn()
		delete(p.listeners, k)
	}
	for a := range p.addrs {
		_ = run(context.Background(), "ip", "addr", "del", a.String()+"/32", "dev", svcLink)
		delete(p.addrs, a)
	}
}
