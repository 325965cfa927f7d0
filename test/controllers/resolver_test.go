package controllers

import (
	"context"
	"fmt"
	"sync"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
	"git.unkin.net/unkin/bind-operator/dnsclient"
)

// loopbackResolver sends a zone's UPDATEs to a named the test started on
// loopback: envtest runs no pods, so there is no primary Service to reach.
type loopbackResolver struct {
	mu      sync.Mutex
	servers map[string]clusterpods.ZoneServer
}

var resolver = &loopbackResolver{servers: map[string]clusterpods.ZoneServer{}}

func (l *loopbackResolver) set(namespace, zone, addr string, key dnsclient.Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.servers[namespace+"/"+zone] = clusterpods.ZoneServer{Addr: addr, Key: key}
}

func (l *loopbackResolver) Resolve(_ context.Context, zone *v1.BindZone) (clusterpods.ZoneServer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.servers[zone.Namespace+"/"+string(zone.Spec.ZoneName)]
	if !ok {
		return s, fmt.Errorf("no test server for zone %s", zone.Spec.ZoneName)
	}
	return s, nil
}
