package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Client calls one agent. It is safe for concurrent use and keeps its
// connection alive between calls.
type Client struct {
	base string
	http *http.Client
}

// ClientConfig is what the operator needs to reach one pod's agent.
type ClientConfig struct {
	// Address is host:port of the pod's agent port (a pod IP or a
	// per-pod DNS name). The certificate is verified as ServerName
	// regardless.
	Address string
	// CAPEM, CertPEM, KeyPEM: the cluster's agent CA and the operator's
	// client certificate and key.
	CAPEM, CertPEM, KeyPEM []byte
	// Timeout bounds each call (default 60 s; batches of thousands of
	// zones take seconds).
	Timeout time.Duration
	// TLS, when set, replaces the config built from the PEM fields (tests).
	TLS *tls.Config
}

// NewClient builds a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if _, _, err := net.SplitHostPort(cfg.Address); err != nil {
		return nil, fmt.Errorf("agent: address %q: %w", cfg.Address, err)
	}
	tlsCfg := cfg.TLS
	if tlsCfg == nil {
		var err error
		if tlsCfg, err = ClientTLSConfig(cfg.CAPEM, cfg.CertPEM, cfg.KeyPEM); err != nil {
			return nil, err
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	tr := &http.Transport{
		TLSClientConfig:       tlsCfg,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
		ForceAttemptHTTP2:     true,
	}
	return &Client{
		base: "https://" + cfg.Address,
		http: &http.Client{Transport: tr, Timeout: cfg.Timeout},
	}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Error is a non-2xx reply from the agent, with its message.
type Error struct {
	Status  int    // HTTP status
	Message string // the agent's error text (bounded, untrusted)
	Field   string // for 422: the offending input
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("agent: %d: %s (field %s)", e.Status, e.Message, e.Field)
	}
	return fmt.Sprintf("agent: %d: %s", e.Status, e.Message)
}

// Invalid reports whether the agent refused the request's content (4xx):
// sending it again will not help.
func (e *Error) Invalid() bool { return e.Status >= 400 && e.Status < 500 }

// BatchError lists the entries of a batch named refused.
type BatchError struct {
	Failed []EnsureZoneResult
}

func (e *BatchError) Error() string {
	first := e.Failed[0]
	return fmt.Sprintf("agent: %d zone(s) failed; first %s: %s", len(e.Failed), first.Zone, first.Error)
}

// ErrBadReply means the agent answered something that is not the API.
var ErrBadReply = errors.New("agent: malformed reply")

// EnsureZone makes the agent serve one zone with the request's clause.
func (c *Client) EnsureZone(ctx context.Context, req EnsureZoneRequest) (EnsureZoneResult, error) {
	var out EnsureZoneResult
	err := c.call(ctx, PathEnsure, req, &out, MaxRequestBytes)
	return out, err
}

// EnsureZones ensures many zones over one control session. It returns one
// result per entry; when named refused some, the error is a *BatchError
// and the results are still complete.
func (c *Client) EnsureZones(ctx context.Context, zones []EnsureZoneRequest) ([]EnsureZoneResult, error) {
	if len(zones) > MaxBatchZones {
		return nil, fmt.Errorf("agent: batch of %d zones exceeds %d; split it", len(zones), MaxBatchZones)
	}
	var out EnsureZonesResponse
	if err := c.call(ctx, PathEnsureBatch, EnsureZonesRequest{Zones: zones}, &out, MaxBatchBytes); err != nil {
		return nil, err
	}
	if len(out.Results) != len(zones) {
		return nil, fmt.Errorf("%w: %d results for %d zones", ErrBadReply, len(out.Results), len(zones))
	}
	var failed []EnsureZoneResult
	for _, r := range out.Results {
		if r.Error != "" {
			failed = append(failed, r)
		}
	}
	if failed != nil {
		return out.Results, &BatchError{Failed: failed}
	}
	return out.Results, nil
}

// DeleteZone removes a zone; deleting an absent zone succeeds with
// ActionAbsent.
func (c *Client) DeleteZone(ctx context.Context, ref ZoneRef) (DeleteZoneResult, error) {
	var out DeleteZoneResult
	err := c.call(ctx, PathDelete, ref, &out, MaxRequestBytes)
	return out, err
}

// ZoneStatus asks named about a zone.
func (c *Client) ZoneStatus(ctx context.Context, ref ZoneRef) (ZoneStatus, error) {
	var out ZoneStatus
	err := c.call(ctx, PathStatus, ref, &out, MaxRequestBytes)
	return out, err
}

// ApplyPolicy makes the pod's policy zone enforce req.Records; it returns
// once named serves them.
func (c *Client) ApplyPolicy(ctx context.Context, req PolicyRequest) (PolicyResult, error) {
	var out PolicyResult
	err := c.call(ctx, PathPolicy, req, &out, MaxPolicyBytes)
	return out, err
}

// ProbeTransfer tries the transfer of a Secondary zone from the pod.
func (c *Client) ProbeTransfer(ctx context.Context, req TransferProbeRequest) (TransferProbeResult, error) {
	var out TransferProbeResult
	err := c.call(ctx, PathProbe, req, &out, MaxRequestBytes)
	return out, err
}

// SetOwners tells the primary's agent which record sets of a zone UPDATEs
// signed with the zone's update key may not change.
func (c *Client) SetOwners(ctx context.Context, req OwnersRequest) (OwnersResult, error) {
	var out OwnersResult
	err := c.call(ctx, PathOwners, req, &out, MaxOwnersBytes)
	return out, err
}

// ReplyChecks validate and canonicalise what the client reads back from
// an agent: agent/validate's Owners and Ref (validate.Replies), the checks
// the agent applies to what it stores. That package imports this one for
// the API's types, so the caller hands them in.
type ReplyChecks struct {
	Owners func(OwnersRequest) (OwnersRequest, error)
	Ref    func(ZoneRef) (ZoneRef, error)
	Keys   func(ZoneKeys) (ZoneKeys, error)
}

// ready fails rather than hand back replies nobody checked.
func (c ReplyChecks) ready() error {
	if c.Owners == nil || c.Ref == nil {
		return errors.New("agent: no checks for the stored-owner reply (pass validate.Replies)")
	}
	return nil
}

// IsNotFound reports whether err is the agent's 404: for PathOwnersGet, no
// owners stored for the zone; for a path the agent does not know, an agent
// older than that path.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// StoredOwnersList lists the zones (and views) whose owners the agent
// stores, sorted by zone, then view, canonical. The reply is checked: at
// most MaxStoredZones refs, each a valid canonical zone and view, in that
// order, each once.
//
// An error for which IsNotFound is true means the agent predates
// stored-owner reads (it does not know PathOwnersList): it can say nothing
// about what it stores, so there is nothing to sweep from it.
func (c *Client) StoredOwnersList(ctx context.Context, chk ReplyChecks) ([]ZoneRef, error) {
	if err := chk.ready(); err != nil {
		return nil, err
	}
	var out StoredOwners
	if err := c.callBounded(ctx, PathOwnersList, struct{}{}, &out, MaxRequestBytes, MaxStoredListBytes); err != nil {
		return nil, err
	}
	if len(out.Zones) > MaxStoredZones {
		return nil, fmt.Errorf("%w: %d stored zones, more than %d", ErrBadReply, len(out.Zones), MaxStoredZones)
	}
	for i, ref := range out.Zones {
		canon, err := chk.Ref(ref)
		if err != nil {
			return nil, fmt.Errorf("%w: zones[%d]: %s", ErrBadReply, i, Bound(err.Error()))
		}
		if canon != ref {
			return nil, fmt.Errorf("%w: zones[%d]: %s is not canonical", ErrBadReply, i, Bound(refString(ref)))
		}
		if i > 0 && CompareZoneRefs(out.Zones[i-1], ref) >= 0 {
			return nil, fmt.Errorf("%w: zones[%d]: %s is out of order or repeated", ErrBadReply, i, refString(ref))
		}
	}
	return out.Zones, nil
}

// StoredOwners reads back what the agent stores for one zone: the last
// OwnersRequest it accepted, canonical, values included. An error for
// which IsNotFound is true means it stores nothing for the zone; from an
// agent whose StoredOwnersList is a 404 too, that the agent predates
// stored-owner reads.
//
// The reply can be as large as a request (MaxOwnersBytes), more than
// other replies (MaxReplyBytes). It is untrusted: it must pass the agent's
// own validation and name the zone and view asked for.
func (c *Client) StoredOwners(ctx context.Context, ref ZoneRef, chk ReplyChecks) (OwnersRequest, error) {
	if err := chk.ready(); err != nil {
		return OwnersRequest{}, err
	}
	want, err := chk.Ref(ref)
	if err != nil {
		return OwnersRequest{}, err
	}
	var out OwnersRequest
	if err := c.callBounded(ctx, PathOwnersGet, want, &out, MaxRequestBytes, MaxOwnersBytes); err != nil {
		return OwnersRequest{}, err
	}
	got, err := chk.Owners(out)
	if err != nil {
		return OwnersRequest{}, fmt.Errorf("%w: %s", ErrBadReply, Bound(err.Error()))
	}
	if have := (ZoneRef{View: got.View, Zone: got.Zone}); have != want {
		return OwnersRequest{}, fmt.Errorf("%w: asked for the owners of %s, got those of %s", ErrBadReply, refString(want), Bound(refString(have)))
	}
	return got, nil
}

// CompareZoneRefs is the order of a StoredOwners list: by zone, then view
// (byte order; "" the default view first).
func CompareZoneRefs(a, b ZoneRef) int {
	if c := strings.Compare(a.Zone, b.Zone); c != 0 {
		return c
	}
	return strings.Compare(a.View, b.View)
}

func refString(r ZoneRef) string {
	if r.View == "" {
		return "zone " + r.Zone
	}
	return "zone " + r.Zone + " in view " + r.View
}

// ZoneKeys reads the DNSSEC key files named keeps for zone. The reply is
// untrusted: it must pass the agent's own checks (chk.Keys) and be the
// zone asked for. An error for which IsNotFound is true means the agent
// predates key reads.
func (c *Client) ZoneKeys(ctx context.Context, zone string, chk ReplyChecks) (ZoneKeys, error) {
	if chk.Keys == nil || chk.Ref == nil {
		return ZoneKeys{}, errors.New("agent: no checks for the key reply (pass validate.Replies)")
	}
	want, err := chk.Ref(ZoneRef{Zone: zone})
	if err != nil {
		return ZoneKeys{}, err
	}
	var out ZoneKeys
	if err := c.callBounded(ctx, PathKeysGet, want, &out, MaxRequestBytes, MaxKeysBytes); err != nil {
		return ZoneKeys{}, err
	}
	got, err := chk.Keys(out)
	if err != nil {
		return ZoneKeys{}, fmt.Errorf("%w: %s", ErrBadReply, Bound(err.Error()))
	}
	if got.Zone != want.Zone {
		return ZoneKeys{}, fmt.Errorf("%w: asked for the keys of %s, got those of %s", ErrBadReply, want.Zone, Bound(got.Zone))
	}
	return got, nil
}

// RestoreZoneKeys writes a zone's key files into named's key-directory
// unless named serves the zone or has key files of it already.
func (c *Client) RestoreZoneKeys(ctx context.Context, keys ZoneKeys) (KeysRestoreResult, error) {
	var out KeysRestoreResult
	err := c.callBounded(ctx, PathKeysRestore, keys, &out, MaxKeysBytes, MaxRequestBytes)
	return out, err
}

// SeedNeeded asks whether the primary zone file of ref is missing. An
// error for which IsNotFound is true means the agent predates seeds.
func (c *Client) SeedNeeded(ctx context.Context, ref ZoneRef) (bool, error) {
	var out SeedNeeded
	err := c.call(ctx, PathSeedNeeded, ref, &out, MaxRequestBytes)
	return out.Needed, err
}

// Seed streams a large zone's file, of size bytes and lowercase hex
// SHA-256 digest, to the agent, which writes it as the primary zone file
// of ref unless that file exists. The body is not buffered.
func (c *Client) Seed(ctx context.Context, ref ZoneRef, digest string, size int64, file io.Reader) (SeedResult, error) {
	if size > MaxSeedFileBytes {
		return SeedResult{}, fmt.Errorf("agent: zone file of %d bytes exceeds the limit of %d", size, MaxSeedFileBytes)
	}
	q := url.Values{SeedQueryZone: {ref.Zone}, SeedQuerySHA256: {digest}}
	if ref.View != "" {
		q.Set(SeedQueryView, ref.View)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+PathSeed+"?"+q.Encode(), io.LimitReader(file, size))
	if err != nil {
		return SeedResult{}, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", SeedContentType)
	var out SeedResult
	if err := c.do(req, PathSeed, &out, MaxRequestBytes); err != nil {
		return SeedResult{}, err
	}
	out.Reason = Bound(out.Reason)
	return out, nil
}

// Sync flushes every zone's journal into its file (rndc sync -clean).
func (c *Client) Sync(ctx context.Context) error {
	var out SyncResult
	return c.call(ctx, PathSync, struct{}{}, &out, MaxRequestBytes)
}

// call sends in (at most limit bytes) and decodes the reply into out,
// reading at most MaxReplyBytes.
func (c *Client) call(ctx context.Context, path string, in, out any, limit int) error {
	return c.callBounded(ctx, path, in, out, limit, MaxReplyBytes)
}

// callBounded is call reading at most replyLimit bytes of reply: only the
// replies that carry what a large request stored need more than
// MaxReplyBytes.
func (c *Client) callBounded(ctx context.Context, path string, in, out any, limit, replyLimit int) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if len(body) > limit {
		return fmt.Errorf("agent: request of %d bytes exceeds the limit of %d", len(body), limit)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, path, out, replyLimit)
}

// do sends req and decodes the reply into out, reading at most replyLimit
// bytes of it.
func (c *Client) do(req *http.Request, path string, out any, replyLimit int) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("agent: %s: %w", path, err)
	}
	defer resp.Body.Close()
	// The reply is untrusted: read at most replyLimit bytes, then decode.
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(replyLimit)+1))
	if err != nil {
		return fmt.Errorf("agent: %s: reading reply: %w", path, err)
	}
	if len(data) > replyLimit {
		return fmt.Errorf("%w: reply larger than %d bytes", ErrBadReply, replyLimit)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Status: resp.StatusCode}
		var er ErrorResponse
		if json.Unmarshal(data, &er) == nil && er.Error != "" {
			e.Message, e.Field = Bound(er.Error), Bound(er.Field)
		} else {
			e.Message = Bound(strings.TrimSpace(string(data)))
		}
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
		return e
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadReply, path, err)
	}
	return nil
}

// MaxMessageBytes caps a message built from untrusted text (see Bound):
// enough for a person to act on, far below the API server's 32 KiB limit
// for a condition message, so quoting a reply can never fail a status
// update.
const MaxMessageBytes = 1024

// Bound keeps an untrusted message printable and short. Replies from an
// agent or a DNS server end up quoted in errors, status conditions and
// events that people read in a terminal: a hostile or broken peer must not
// be able to fill them, break their lines, or slip in control or
// bidirectional-formatting characters. Everything that is not printable
// becomes a space; the cut falls on a character boundary and is marked
// "...". Condition messages that may quote a reply go through it.
func Bound(s string) string { return BoundTo(s, MaxMessageBytes) }

// BoundTo is Bound with a limit of n bytes (before the "..." mark).
func BoundTo(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r != ' ' && !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
