// Package dnsclient talks DNS to named the way external-dns does: record
// sets change through TSIG-signed RFC 2136 UPDATEs (batched, with
// prerequisites where they make a change safe), and zone contents are read
// back with AXFR/IXFR and SOA queries to detect drift.
//
// Every exchange runs over TCP. Batches are far larger than a UDP datagram
// can carry off loopback (a 50-record UPDATE is already ~1.7 KB), and TCP
// lets one kept connection carry many messages.
package dnsclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/miekg/dns"
)

const (
	// DefaultTimeout bounds one exchange when ctx has no earlier deadline.
	DefaultTimeout = 30 * time.Second
	// fudge is the TSIG time window, the RFC 8945 recommendation.
	fudge = 300
)

// Options tune a Client. The zero value uses the defaults.
type Options struct {
	Timeout time.Duration // per exchange; default DefaultTimeout
	// BatchSize is the most records one UPDATE writes (added records; a
	// deletion counts one); default DefaultBatchSize.
	BatchSize int
	// MaxMessageSize caps an UPDATE's wire size; default DefaultMaxMessageSize.
	MaxMessageSize int
	// MaxTransferRecords bounds what an AXFR/IXFR may return; default
	// DefaultMaxTransferRecords.
	MaxTransferRecords int
	// MaxTransferBytes bounds the wire size of the records an AXFR/IXFR
	// may return; default DefaultMaxTransferBytes.
	MaxTransferBytes int
	// Logger receives one debug line per exchange (never key material).
	Logger *slog.Logger
}

// Client sends queries, UPDATEs and transfers to one server. It is safe
// for concurrent use; UPDATEs share one kept TCP connection, one message at
// a time.
type Client struct {
	server string
	key    *Key
	opts   Options
	log    *slog.Logger

	mu   sync.Mutex
	conn net.Conn // kept TCP connection for UPDATEs and queries
}

// New returns a client for server (host:port). key may be nil for unsigned
// queries and transfers.
func New(server string, key *Key, opts Options) (*Client, error) {
	if key != nil && !key.valid() {
		return nil, errors.New("dnsclient: key has no secret (use NewKey)")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.MaxMessageSize <= 0 || opts.MaxMessageSize > dns.MaxMsgSize {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.MaxTransferRecords <= 0 {
		opts.MaxTransferRecords = DefaultMaxTransferRecords
	}
	if opts.MaxTransferBytes <= 0 {
		opts.MaxTransferBytes = DefaultMaxTransferBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{server: server, key: key, opts: opts, log: log}, nil
}

// String never shows the key's secret.
func (c *Client) String() string {
	if c.key == nil {
		return "dns client for " + c.server
	}
	return fmt.Sprintf("dns client for %s with %v", c.server, *c.key)
}

// Close drops the kept connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// sign gives m a fresh TSIG record, replacing one left from an earlier
// attempt. It runs before every write: miekg/dns takes the TSIG record out
// of the message while signing it, so a message resent after a stale
// connection went out unsigned, and named denied it.
func (c *Client) sign(m *dns.Msg) {
	if c.key == nil {
		return
	}
	if m.IsTsig() != nil {
		m.Extra = m.Extra[:len(m.Extra)-1]
	}
	m.SetTsig(c.key.Name, c.key.Algorithm, fudge, time.Now().Unix())
}

func (c *Client) tsigProvider() dns.TsigProvider {
	if c.key == nil {
		return nil
	}
	return provider{*c.key}
}

// exchange signs m, sends it over the kept TCP connection and returns the
// reply. verifyErr reports a reply whose TSIG did not verify (the reply is
// still returned so its rcode can be reported, but must not be trusted as
// success); err reports transport failures.
//
// Each message gets a fresh dns.Conn around the kept net.Conn: a dns.Conn
// chains the previous message's MAC into the next signature (meant for
// multi-message transfers), and named answers a second UPDATE signed that
// way with BADSIG (docs/bind-facts.md, "DNS client facts"). A fresh
// wrapper signs every message on its own.
func (c *Client) exchange(ctx context.Context, m *dns.Msg) (reply *dns.Msg, verifyErr, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A kept connection may have been closed by named while idle
	// (tcp-idle-timeout). Only then, when nothing of a reply arrived, is
	// the message sent once more on a fresh connection: named never read it.
	for attempt := 0; attempt < 2; attempt++ {
		reused := c.conn != nil
		if !reused {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", c.server)
			if err != nil {
				return nil, nil, fmt.Errorf("dnsclient: dial %s: %w", c.server, err)
			}
			c.conn = conn
		}
		conn := c.conn
		var keep bool
		reply, verifyErr, keep, err = c.roundTrip(ctx, conn, m)
		if !keep {
			_ = conn.Close()
			c.conn = nil
		}
		if err == nil {
			return reply, verifyErr, nil
		}
		if !reused || ctx.Err() != nil || !staleConn(err) {
			break
		}
	}
	if ctx.Err() != nil {
		return nil, nil, fmt.Errorf("dnsclient: %s: %w", c.server, ctx.Err())
	}
	return nil, nil, fmt.Errorf("dnsclient: %s: %w", c.server, err)
}

// roundTrip sends m on conn and reads its reply. keep says whether conn
// may carry a later message: not after an error, and not when ctx ended
// meanwhile. ctx's end cuts a blocked read short by setting a past
// deadline on conn from ctx's AfterFunc, which runs on its own goroutine
// and may do so after roundTrip returned; so it holds conn itself, never
// the client's field (which exchange clears when it drops a connection:
// reading the field there once crashed the manager), and a connection it
// may still touch is dropped.
func (c *Client) roundTrip(ctx context.Context, conn net.Conn, m *dns.Msg) (reply *dns.Msg, verifyErr error, keep bool, err error) {
	deadline := time.Now().Add(c.opts.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if !stop() {
			keep = false
		}
	}()

	dc := &dns.Conn{Conn: conn, TsigProvider: c.tsigProvider()}
	c.sign(m)
	if err := dc.WriteMsg(m); err != nil {
		return nil, nil, false, err
	}
	r, err := dc.ReadMsg()
	if r == nil {
		return nil, nil, false, err
	}
	if r.Id != m.Id {
		return nil, nil, false, dns.ErrId
	}
	if err != nil && !isTsigErr(err) {
		return nil, nil, false, err // unpack failure: the stream cannot be trusted
	}
	return r, replyAuth(c.key != nil, r, err), true, nil
}

func isTsigErr(err error) bool {
	return errors.Is(err, dns.ErrSig) || errors.Is(err, dns.ErrSecret) || errors.Is(err, dns.ErrTime) ||
		errors.Is(err, dns.ErrNoSig) || errors.Is(err, dns.ErrKeyAlg) || errors.Is(err, dns.ErrAuth)
}

// staleConn tells errors of a connection the server closed while idle.
func staleConn(err error) bool {
	var ne *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || (errors.As(err, &ne) && !ne.Timeout())
}

func (c *Client) logExchange(ctx context.Context, op, zone string, records int, start time.Time, err error) {
	attrs := []any{"server", c.server, "zone", zone, "records", records, "duration", time.Since(start)}
	if c.key != nil {
		attrs = append(attrs, "key", *c.key)
	}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	c.log.DebugContext(ctx, op, attrs...)
}
