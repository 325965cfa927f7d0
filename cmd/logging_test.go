package main

import (
	"bytes"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestLazyFieldsKeepEveryValue: a logger made by chained With calls writes
// every field of the chain once, in order, exactly as an eager one would,
// and a level that is off writes nothing.
func TestLazyFieldsKeepEveryValue(t *testing.T) {
	g := NewWithT(t)
	write := func(wrap bool) []map[string]any {
		var buf bytes.Buffer
		core := zapcore.NewCore(zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg"}), zapcore.AddSync(&buf), zapcore.InfoLevel)
		if wrap {
			core = lazyFields{core}
		}
		log := uberzap.New(core).With(uberzap.String("controller", "dnsrecord")).With(uberzap.String("name", "www"), uberzap.Int("n", 1))
		log.Debug("not written")
		log.Info("first")
		log.With(uberzap.String("reconcileID", "r1")).Info("second")
		var lines []map[string]any
		for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			m := map[string]any{}
			g.Expect(json.Unmarshal(l, &m)).To(Succeed(), "%s", l)
			lines = append(lines, m)
		}
		return lines
	}
	lazy := write(true)
	g.Expect(lazy).To(Equal(write(false)))
	g.Expect(lazy).To(Equal([]map[string]any{
		{"msg": "first", "controller": "dnsrecord", "name": "www", "n": 1.0},
		{"msg": "second", "controller": "dnsrecord", "name": "www", "n": 1.0, "reconcileID": "r1"},
	}))
}

// TestLazyFieldsEncodeNothingUntilWritten: making a logger with fields
// costs less than encoding them (what controller-runtime does for every
// reconcile and webhook request).
func TestLazyFieldsEncodeNothingUntilWritten(t *testing.T) {
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg"}), zapcore.AddSync(&bytes.Buffer{}), zapcore.InfoLevel)
	fields := []zapcore.Field{uberzap.String("controller", "dnsrecord"), uberzap.String("namespace", "team"), uberzap.String("name", "www"), uberzap.String("reconcileID", "0b8e57b0-8f44-4c5e-9a43-5d7c0c5c7a5e")}
	eager := testing.AllocsPerRun(100, func() { _ = core.With(fields) })
	lazy := testing.AllocsPerRun(100, func() { _ = lazyFields{core}.With(fields) })
	if lazy >= eager {
		t.Fatalf("a lazy With allocates %v times, an eager one %v", lazy, eager)
	}
}
