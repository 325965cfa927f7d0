package server

import (
	"context"
	"errors"
	"sync"

	"git.unkin.net/unkin/bind-operator/rndc"
)

// session keeps one control-channel session open and redials after a
// broken one. A session costs a TCP connection and a nonce exchange; reusing
// it is what makes ~1,000 addzones/s possible (the rndc binary manages ~94).
type session struct {
	addr    string
	keyFile string
	dialer  rndc.Dialer

	mu sync.Mutex
	c  *rndc.Client
}

// command runs one command. When a session that had been idle fails
// (named restarted, connection reset), it redials once and sends the
// command again: the agent's commands are safe to repeat (a repeated
// addzone says "already exists", a repeated delzone "not found", and the
// callers treat both as success). A *rndc.CommandError (named answered
// and refused) leaves the session open.
func (s *session) command(ctx context.Context, cmd string) (rndc.Response, error) {
	for attempt := 0; ; attempt++ {
		c, fresh, err := s.client(ctx)
		if err != nil {
			return rndc.Response{}, err
		}
		resp, err := c.Command(ctx, cmd)
		var ce *rndc.CommandError
		if err == nil || errors.As(err, &ce) {
			return resp, err
		}
		s.drop(c)
		if fresh || attempt > 0 || ctx.Err() != nil {
			return resp, err
		}
	}
}

func (s *session) client(ctx context.Context) (c *rndc.Client, fresh bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		return s.c, false, nil
	}
	// The key is read per dial: a rotated Secret is picked up by the next
	// session without restarting the agent.
	key, err := LoadControlKey(s.keyFile)
	if err != nil {
		return nil, false, err
	}
	c, err = s.dialer.Dial(ctx, s.addr, key)
	if err != nil {
		return nil, false, err
	}
	s.c = c
	return c, true, nil
}

func (s *session) drop(c *rndc.Client) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == c {
		_ = s.c.Close()
		s.c = nil
	}
}

func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil {
		_ = s.c.Close()
		s.c = nil
	}
}
