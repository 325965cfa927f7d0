package rndc

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// fakeServer answers the handshake correctly, then lets reply() shape the
// answer to the first real command, so the client's checks on replies can
// be tested one by one.
func fakeServer(t *testing.T, key Key, reply func(req Table, payload []byte) []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		for i := 0; i < 2; i++ {
			payload, err := readFrame(conn, MaxRequestSize)
			if err != nil {
				return
			}
			d, err := decode(payload)
			if err != nil || key.verify(d, payload) != nil {
				return
			}
			var out []byte
			if i == 0 {
				out, _ = key.encode(response(d.table, 42, 0, ""))
			} else {
				out = reply(d.table, payload)
			}
			if _, err := conn.Write(out); err != nil {
				return
			}
		}
	}()
	return l.Addr().String()
}

// response builds a reply the way named does: echo _ser, mark _rpl, add
// the nonce, result and text.
func response(req Table, nonce, result uint32, text string) Table {
	ctrl, _ := req.Table("_ctrl")
	ser, _ := ctrl.Uint32("_ser")
	now := uint32(time.Now().Unix())
	data := Table{entry("type", str("x")), entry("result", num(result))}
	if text != "" {
		data = append(data, entry("text", str(text)))
	}
	return Table{
		entry("_ctrl", Table{entry("_ser", num(ser)), entry("_tim", num(now)), entry("_exp", num(now+60)), entry("_rpl", str("1")), entry("_nonce", num(nonce))}),
		entry("_data", data),
	}
}

func testKey(t testing.TB, alg string) Key {
	k, err := NewKey("test", alg, "c2VjcmV0LXNlY3JldC1zZWNyZXQ=")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestReplyChecks(t *testing.T) {
	key := testKey(t, "hmac-sha256")
	other := testKey(t, "hmac-sha512")
	cases := []struct {
		name  string
		reply func(req Table, payload []byte) []byte
		want  error
	}{
		{"good", func(req Table, _ []byte) []byte {
			b, _ := key.encode(response(req, 42, 0, "fine"))
			return b
		}, nil},
		{"unsigned", func(req Table, _ []byte) []byte {
			b, _ := appendEntries(append(make([]byte, 4), 0, 0, 0, 1), response(req, 42, 0, "fine"))
			return frameOf(b[4:])
		}, ErrBadAuth},
		{"signed by another key", func(req Table, _ []byte) []byte {
			b, _ := other.encode(response(req, 42, 0, "fine"))
			return b
		}, ErrBadAuth},
		{"tampered after signing", func(req Table, _ []byte) []byte {
			b, _ := key.encode(response(req, 42, 0, "fine"))
			return bytes.Replace(b, []byte("fine"), []byte("evil"), 1)
		}, ErrBadAuth},
		{"wrong serial (replayed reply)", func(req Table, _ []byte) []byte {
			t := response(req, 42, 0, "fine")
			ctrl := t[0].Value.(Table)
			ctrl[0] = entry("_ser", num(1))
			b, _ := key.encode(t)
			return b
		}, ErrBadReply},
		{"wrong nonce", func(req Table, _ []byte) []byte {
			b, _ := key.encode(response(req, 43, 0, "fine"))
			return b
		}, ErrBadReply},
		{"expired", func(req Table, _ []byte) []byte {
			t := response(req, 42, 0, "fine")
			ctrl := t[0].Value.(Table)
			ctrl[2] = entry("_exp", num(uint32(time.Now().Unix()-10)))
			b, _ := key.encode(t)
			return b
		}, ErrBadReply},
		{"clock skew", func(req Table, _ []byte) []byte {
			t := response(req, 42, 0, "fine")
			ctrl := t[0].Value.(Table)
			ctrl[1] = entry("_tim", num(uint32(time.Now().Unix()-3600)))
			b, _ := key.encode(t)
			return b
		}, ErrBadReply},
		{"oversized frame", func(req Table, _ []byte) []byte {
			return []byte{0xff, 0xff, 0xff, 0xff}
		}, ErrMalformed},
		{"garbage", func(req Table, _ []byte) []byte {
			return frameOf([]byte{0, 0, 0, 1, 5, '_', 'a', 'u', 't', 'h', 9, 9})
		}, ErrMalformed},
		{"hang up", func(req Table, _ []byte) []byte { return nil }, ErrServerClosed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakeServer(t, key, tc.reply)
			c, err := Dial(ctxT(t), addr, key)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			r, err := c.Command(ctxT(t), "status")
			if tc.want == nil {
				if err != nil || r.Text != "fine" {
					t.Fatalf("got %q, %v", r.Text, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			// The session is dead after an untrustworthy reply.
			if _, err2 := c.Command(ctxT(t), "status"); err2 == nil {
				t.Fatal("session still usable after a bad reply")
			}
		})
	}
}

func frameOf(payload []byte) []byte {
	out := make([]byte, 4, 4+len(payload))
	out[0], out[1], out[2], out[3] = byte(len(payload)>>24), byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	return append(out, payload...)
}

func TestCommandErrorCarriesErrAndText(t *testing.T) {
	key := testKey(t, "hmac-md5")
	addr := fakeServer(t, key, func(req Table, _ []byte) []byte {
		tb := response(req, 42, 23, "zone 'x' already exists")
		data := tb[1].Value.(Table)
		tb[1].Value = append(data, entry("err", str("already exists")))
		b, _ := key.encode(tb)
		return b
	})
	c, err := Dial(ctxT(t), addr, key)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Command(ctxT(t), "addzone x { type primary; };")
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Result != 23 || ce.Err != "already exists" || ce.Text != "zone 'x' already exists" || ce.Command != "addzone" {
		t.Fatalf("got %#v", err)
	}
}

// The secret never shows up in any rendering of a Key, a Client or an error.
func TestKeySecretMasked(t *testing.T) {
	const secretB64 = "c2VjcmV0LXNlY3JldC1zZWNyZXQ="
	key := testKey(t, "hmac-sha256")
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("dial", "key", key)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("dial", "key", key)
	c := &Client{key: key, addr: "127.0.0.1:953"}
	wrapper := struct{ K Key }{key}
	var out strings.Builder
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		fmt.Fprintf(&out, verb+"\n", key)
		fmt.Fprintf(&out, verb+"\n", &key)
		fmt.Fprintf(&out, verb+"\n", wrapper)
		fmt.Fprintf(&out, verb+"\n", c)
	}
	_, err := NewKey("bad", "hmac-sha256", secretB64+"!!")
	out.WriteString(err.Error())
	all := out.String() + logs.String()
	for _, leak := range []string{secretB64, "secret-secret-secret", fmt.Sprintf("%x", "secret-secret-secret")} {
		if strings.Contains(all, leak) {
			t.Fatalf("secret leaked:\n%s", all)
		}
	}
	if !strings.Contains(all, masked) {
		t.Fatalf("no masked marker in:\n%s", all)
	}
}

// Signatures match the layout named expects (the integration tests prove
// named accepts them; this pins the field sizes).
func TestDigestLayout(t *testing.T) {
	for alg := range algorithms {
		k := testKey(t, alg.String())
		d := k.digest([]byte("x"))
		if alg == HMACMD5 {
			if len(d) != 22 || bytes.ContainsRune(d, '=') {
				t.Fatalf("md5 digest %q", d)
			}
			continue
		}
		if len(d) != 89 || d[0] != byte(alg) {
			t.Fatalf("%s digest len %d first %d", alg, len(d), d[0])
		}
	}
}

func TestRoundTrip(t *testing.T) {
	key := testKey(t, "hmac-sha384")
	in := Table{
		entry("_ctrl", Table{entry("_ser", num(1))}),
		entry("_data", Table{entry("type", str("status")), entry("l", List{str("a"), Table{}, List{}})}),
	}
	frame, err := key.encode(in)
	if err != nil {
		t.Fatal(err)
	}
	d, err := decode(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	if err := key.verify(d, frame[4:]); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(d.table[1:]); got != fmt.Sprint(in) {
		t.Fatalf("round trip:\n%s\n%s", got, fmt.Sprint(in))
	}
}
