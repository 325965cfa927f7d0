package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// named asks the agent about UPDATEs through the "external" rule of a
// zone's update-policy: per record of an UPDATE that no earlier rule
// granted, it connects to the Unix socket, writes one request and reads a
// 4-byte answer (lib/dns/ssu_external.c, protocol version 1). Anything but
// an answer of 1 refuses the record, so an agent that is down, slow or
// confused refuses UPDATEs rather than letting one through.

const (
	ssuVersion = 1
	// maxSSURequest bounds a request: five names and addresses of at most
	// 1,025 bytes each and a TKEY token, which TSIG-signed UPDATEs do not
	// carry.
	maxSSURequest = 64 << 10
	// ssuTimeout bounds one exchange; named waits for it while holding
	// the UPDATE.
	ssuTimeout = 5 * time.Second
	// maxSSUConns bounds the exchanges served at once; named makes one per
	// record, one UPDATE at a time per zone.
	maxSSUConns = 64
)

// ssuRequest is one question named asks: may signer change the records of
// type typ at name? addr is the client's address for TCP UPDATEs.
type ssuRequest struct {
	signer, name, addr, typ, key string
}

// readSSURequest reads one request: version and total length (32-bit,
// network order), five NUL-terminated strings (signer, name, address,
// type, key) and a length-prefixed TKEY token.
func readSSURequest(r io.Reader) (ssuRequest, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return ssuRequest{}, fmt.Errorf("header: %w", err)
	}
	if v := binary.BigEndian.Uint32(hdr[:4]); v != ssuVersion {
		return ssuRequest{}, fmt.Errorf("protocol version %d, want %d", v, ssuVersion)
	}
	n := binary.BigEndian.Uint32(hdr[4:])
	if n < 8+5+4 || n > maxSSURequest {
		return ssuRequest{}, fmt.Errorf("request length %d out of range", n)
	}
	body := make([]byte, n-8)
	if _, err := io.ReadFull(r, body); err != nil {
		return ssuRequest{}, fmt.Errorf("body: %w", err)
	}
	return parseSSUBody(body)
}

func parseSSUBody(b []byte) (ssuRequest, error) {
	var f [5]string
	for i := range f {
		end := bytes.IndexByte(b, 0)
		if end < 0 {
			return ssuRequest{}, errors.New("a string is not NUL-terminated")
		}
		f[i], b = string(b[:end]), b[end+1:]
	}
	if len(b) < 4 {
		return ssuRequest{}, errors.New("no token length")
	}
	if n := binary.BigEndian.Uint32(b[:4]); uint64(n) != uint64(len(b)-4) {
		return ssuRequest{}, fmt.Errorf("token length %d, %d bytes left", n, len(b)-4)
	}
	return ssuRequest{signer: f[0], name: f[1], addr: f[2], typ: f[3], key: f[4]}, nil
}

// listenOwners opens the owners socket, replacing one a previous agent
// left behind. named runs as the agent's user (the pod's runAsUser).
func (a *Agent) listenOwners(ctx context.Context) (net.Listener, error) {
	p := a.cfg.Paths.OwnersSocket()
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("owners socket: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", p)
	if err != nil {
		return nil, fmt.Errorf("owners socket: %w", err)
	}
	if err := os.Chmod(p, 0o660); err != nil {
		ln.Close()
		return nil, fmt.Errorf("owners socket: %w", err)
	}
	return ln, nil
}

// serveOwners answers named's questions until ln is closed.
func (a *Agent) serveOwners(ln net.Listener) {
	sem := make(chan struct{}, maxSSUConns)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			a.log.Warn("owners socket", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			a.answerSSU(c)
		})
	}
}

func (a *Agent) answerSSU(c net.Conn) {
	defer c.Close()
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("owners socket panic", "panic", fmt.Sprint(p))
		}
	}()
	_ = c.SetDeadline(time.Now().Add(ssuTimeout))
	req, err := readSSURequest(c)
	if err != nil {
		a.log.Warn("owners socket: unreadable request, refused", "err", err)
		a.metrics.ssu.WithLabelValues("invalid").Inc()
		return
	}
	v, zone := a.owners.judge(req.signer, req.name, req.typ)
	var answer [4]byte
	switch v {
	case grant:
		binary.BigEndian.PutUint32(answer[:], 1)
		a.metrics.ssu.WithLabelValues("granted").Inc()
	case owned:
		a.log.Info("refused an UPDATE to a record set the operator owns; change it through its DNSRecord or BindZone",
			"zone", zone, "name", req.name, "type", req.typ, "signer", req.signer, "client", req.addr)
		a.metrics.ssu.WithLabelValues("owned").Inc()
	case foreignZone:
		a.log.Info("refused an UPDATE: the name is in a zone whose update keys do not include this key; a zone's update key writes that zone only",
			"zone", zone, "name", req.name, "type", req.typ, "signer", req.signer, "client", req.addr)
		a.metrics.ssu.WithLabelValues("foreign-zone").Inc()
	default:
		a.log.Info("refused an UPDATE: no zone this agent serves takes UPDATEs signed by this key for this name",
			"name", req.name, "type", req.typ, "signer", req.signer, "client", req.addr)
		a.metrics.ssu.WithLabelValues("unknown-zone").Inc()
	}
	_, _ = c.Write(answer[:])
}
