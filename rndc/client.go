// Package rndc is a client for BIND 9's control channel (the protocol the
// rndc tool speaks), so the operator's agent can add, modify and delete
// zones and reload named without exec-ing a process per command.
//
// One Client holds one authenticated TCP session: it fetches the server's
// nonce once, then sends any number of commands, each signed with the key,
// and verifies the server's signature on every reply. The 9.18 control
// channel has no TLS; keep it on loopback.
package rndc

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

const (
	// MaxRequestSize is the largest request payload named 9.18 accepts
	// before authenticating a connection; larger requests are refused here,
	// before anything is sent.
	MaxRequestSize = 32 * 1024
	// DefaultMaxReplySize bounds a reply frame. Replies are text (status,
	// showzone, zonestatus); a few MiB is far beyond any of them.
	DefaultMaxReplySize = 4 << 20
	// DefaultClockSkew is how far a reply's _tim may be from our clock,
	// the same window named applies to requests.
	DefaultClockSkew = 300 * time.Second
	// DefaultTimeout bounds one exchange when ctx has no deadline.
	DefaultTimeout = 60 * time.Second
	// expiry is how long a request stays valid (_exp), as rndc sets it.
	expiry = 60
)

// Errors a caller may want to tell apart.
var (
	ErrRequestTooLarge = errors.New("rndc: request larger than 32 KiB")
	ErrClosed          = errors.New("rndc: client closed")
	// ErrServerClosed means named hung up instead of replying: it does that
	// when the key is wrong, the clock is skewed or the request is invalid
	// (named logs the reason).
	ErrServerClosed = errors.New("rndc: server closed the connection without a reply (wrong key, clock skew or invalid request; see named's log)")
	ErrBadReply     = errors.New("rndc: reply does not match the request")
)

// errCutShort ends a session whose request's context ended during the
// exchange (exchange).
var errCutShort = errors.New("rndc: the session ended with a cancelled request; dial again")

// Dialer holds options for Dial. The zero value uses the defaults.
type Dialer struct {
	MaxReplySize int           // default DefaultMaxReplySize
	ClockSkew    time.Duration // default DefaultClockSkew
	Timeout      time.Duration // per exchange without ctx deadline; default DefaultTimeout
	Now          func() time.Time

	onReply func(payload []byte) // test hook: sees every raw reply payload
}

// Client is one authenticated control session. It is safe for concurrent
// use; commands are sent one at a time in call order.
type Client struct {
	d      Dialer
	key    Key
	addr   string
	mu     sync.Mutex
	conn   net.Conn
	nonce  uint32
	serial uint32
	err    error // sticky: once the stream is out of step, the session is dead
}

// Response is a successful reply.
type Response struct {
	Text string // the human-readable output rndc would print
	Data Table  // the whole _data table (type, result, text, ...)
}

// CommandError is a reply with a non-zero result: the command reached named
// and named refused or failed it. The session stays usable.
type CommandError struct {
	Command string // the command's first word (e.g. "addzone")
	Result  uint32 // BIND's isc_result_t
	Err     string // named's error name, e.g. "already exists"
	Text    string // extra explanation, if any
}

func (e *CommandError) Error() string {
	msg := fmt.Sprintf("rndc %s: %s (result %d)", e.Command, e.Err, e.Result)
	if e.Text != "" {
		msg += ": " + e.Text
	}
	return msg
}

// Dial connects to named's control channel at addr and performs the nonce
// handshake with key, using the default Dialer.
func Dial(ctx context.Context, addr string, key Key) (*Client, error) {
	var d Dialer
	return d.Dial(ctx, addr, key)
}

// Dial connects and performs the nonce handshake: a signed "null" command
// whose signed reply carries the nonce every later request must echo.
func (d *Dialer) Dial(ctx context.Context, addr string, key Key) (*Client, error) {
	if err := key.valid(); err != nil {
		return nil, err
	}
	c := &Client{d: *d, key: key, addr: addr}
	if c.d.MaxReplySize <= 0 {
		c.d.MaxReplySize = DefaultMaxReplySize
	}
	if c.d.ClockSkew <= 0 {
		c.d.ClockSkew = DefaultClockSkew
	}
	if c.d.Timeout <= 0 {
		c.d.Timeout = DefaultTimeout
	}
	if c.d.Now == nil {
		c.d.Now = time.Now
	}
	// A random first serial: named drops a request whose (_ser, _tim) it has
	// seen in the last 15 minutes, across all connections.
	var b [4]byte
	_, _ = rand.Read(b[:])
	c.serial = binary.BigEndian.Uint32(b[:])

	var nd net.Dialer
	conn, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rndc: dial %s: %w", addr, err)
	}
	c.conn = conn
	reply, err := c.exchange(ctx, "null")
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("rndc: handshake with %s: %w", addr, err)
	}
	ctrl, _ := reply.Table("_ctrl")
	nonce, ok := ctrl.Uint32("_nonce")
	if !ok || nonce == 0 {
		c.Close()
		return nil, fmt.Errorf("rndc: handshake with %s: %w: no _nonce", addr, ErrBadReply)
	}
	c.nonce = nonce
	return c, nil
}

// Command sends one command line (e.g. "zonestatus example.com") and waits
// for its reply. A non-zero result comes back as *CommandError together
// with the Response.
func (c *Client) Command(ctx context.Context, command string) (Response, error) {
	command = strings.TrimSpace(command)
	if command == "" {
		return Response{}, errors.New("rndc: empty command")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	reply, err := c.exchange(ctx, command)
	if err != nil {
		return Response{}, err
	}
	data, ok := reply.Table("_data")
	if !ok {
		return Response{}, c.fail(fmt.Errorf("%w: no _data", ErrBadReply))
	}
	resp := Response{Data: data}
	resp.Text, _ = data.String("text")
	if res, ok := data.Uint32("result"); ok && res != 0 {
		e := &CommandError{Command: strings.Fields(command)[0], Result: res, Text: resp.Text}
		e.Err, _ = data.String("err")
		return resp, e
	}
	if errText, ok := data.String("err"); ok && errText != "" {
		// A reply with err but no result would be a protocol oddity; do
		// not mistake it for success.
		return resp, &CommandError{Command: strings.Fields(command)[0], Err: errText, Text: resp.Text}
	}
	return resp, nil
}

// Close ends the session.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = ErrClosed
	}
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// String never shows the key's secret.
func (c *Client) String() string { return fmt.Sprintf("rndc client %s with %v", c.addr, c.key) }

// fail marks the session dead: after a broken or unverifiable exchange the
// stream may be out of step, so no later reply could be trusted to match.
func (c *Client) fail(err error) error {
	if c.err == nil {
		c.err = err
		if c.conn != nil {
			_ = c.conn.Close()
		}
	}
	return err
}

// exchange sends one signed request and returns the verified reply table.
// c.mu must be held (or the client not yet shared, as in Dial).
func (c *Client) exchange(ctx context.Context, command string) (Table, error) {
	if c.err != nil {
		return nil, c.err
	}
	c.serial++
	ser := c.serial
	now := c.d.Now()
	ctrl := Table{
		entry("_ser", num(ser)),
		entry("_tim", num(uint32(now.Unix()))),
		entry("_exp", num(uint32(now.Unix()+expiry))),
	}
	if c.nonce != 0 {
		ctrl = append(ctrl, entry("_nonce", num(c.nonce)))
	}
	frame, err := c.key.encode(Table{
		entry("_ctrl", ctrl),
		entry("_data", Table{entry("type", str(command))}),
	})
	if err != nil {
		return nil, err
	}
	if len(frame)-4 > MaxRequestSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrRequestTooLarge, len(frame)-4)
	}

	// Deadlines: ctx's, else the default; a cancelled ctx interrupts I/O.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = now.Add(c.d.Timeout)
	}
	_ = c.conn.SetDeadline(deadline)
	// The AfterFunc runs on its own goroutine, possibly after exchange
	// returned: it holds the connection itself, never reads the field. When
	// it may still run (ctx ended meanwhile), it sets a past deadline on
	// the connection now or any moment, so the session carries no later
	// command: it is marked dead, and the agent's session dials again.
	conn := c.conn
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if !stop() {
			_ = c.fail(errCutShort)
		}
	}()

	if _, err := c.conn.Write(frame); err != nil {
		return nil, c.fail(c.ioErr(ctx, err))
	}
	payload, err := readFrame(c.conn, c.d.MaxReplySize)
	if err != nil {
		return nil, c.fail(c.ioErr(ctx, err))
	}
	if c.d.onReply != nil {
		c.d.onReply(payload)
	}
	d, err := decode(payload)
	if err != nil {
		return nil, c.fail(err)
	}
	if err := c.key.verify(d, payload); err != nil {
		return nil, c.fail(err)
	}
	if err := c.checkCtrl(d.table, ser); err != nil {
		return nil, c.fail(err)
	}
	return d.table, nil
}

func (c *Client) ioErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("rndc: %w", ctx.Err())
	}
	// The connection deadline copied from ctx can fire a moment before ctx
	// itself reports it; report it as ctx's deadline either way.
	var ne net.Error
	if _, has := ctx.Deadline(); has && errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("rndc: %w: %v", context.DeadlineExceeded, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
		return ErrServerClosed
	}
	return fmt.Errorf("rndc: %w", err)
}

func isReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset")
}

// checkCtrl binds a verified reply to our request: it must echo our serial
// (so an older signed reply cannot be replayed), be marked as a reply, carry
// our session's nonce, and be fresh by _tim/_exp.
func (c *Client) checkCtrl(t Table, ser uint32) error {
	ctrl, ok := t.Table("_ctrl")
	if !ok {
		return fmt.Errorf("%w: no _ctrl", ErrBadReply)
	}
	if got, ok := ctrl.Uint32("_ser"); !ok || got != ser {
		return fmt.Errorf("%w: serial %d, want %d", ErrBadReply, got, ser)
	}
	if _, ok := ctrl.String("_rpl"); !ok {
		return fmt.Errorf("%w: not marked as a reply", ErrBadReply)
	}
	if c.nonce != 0 {
		if got, ok := ctrl.Uint32("_nonce"); !ok || got != c.nonce {
			return fmt.Errorf("%w: nonce does not match the session", ErrBadReply)
		}
	}
	now := c.d.Now().Unix()
	tim, ok := ctrl.Uint32("_tim")
	if !ok {
		return fmt.Errorf("%w: no _tim", ErrBadReply)
	}
	skew := int64(c.d.ClockSkew / time.Second)
	if int64(tim) > now+skew || int64(tim) < now-skew {
		return fmt.Errorf("%w: reply time %d is more than %s from ours (%d)", ErrBadReply, tim, c.d.ClockSkew, now)
	}
	if exp, ok := ctrl.Uint32("_exp"); ok && now > int64(exp) {
		return fmt.Errorf("%w: reply expired at %d (now %d)", ErrBadReply, exp, now)
	}
	return nil
}

// readFrame reads one length-prefixed frame, validating the length before
// allocating.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 4 || uint64(n) > uint64(max) {
		return nil, malformed("frame length %d outside 4..%d", n, max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
