package rndc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/test/bindtest"
)

// BenchmarkAddzone compares adding b.N primary zones over one control
// session with running the rndc binary once per zone (what exec-ing into a
// pod would cost). Zone files are written before the timer starts: 9.18
// cannot addzone a primary without its file. The data dir is t.TempDir()
// (disk), where named keeps added zones in its .nzd database.
//
//	go test -run '^$' -bench Addzone -benchtime 2000x ./rndc/
func BenchmarkAddzone(b *testing.B) {
	b.Run("session", func(b *testing.B) {
		s, zones := addzoneServer(b)
		c, err := Dial(context.Background(), s.ControlAddr, keyOf(b, s.ControlKey))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		b.ResetTimer()
		for _, z := range zones {
			if _, err := c.Command(ctx, addzoneCmd(z)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "zones/s")
	})
	b.Run("rndc-binary", func(b *testing.B) {
		s, zones := addzoneServer(b)
		s.RndcConf()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		b.ResetTimer()
		for _, z := range zones {
			if out, err := s.Rndc(ctx, "addzone", z, fmt.Sprintf(`{ type primary; file "%s.db"; };`, z)); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "zones/s")
	})
}

func addzoneServer(b *testing.B) (*bindtest.Server, []string) {
	s := bindtest.Start(b, bindtest.Options{})
	zones := make([]string, b.N)
	for i := range zones {
		zones[i] = fmt.Sprintf("bench%d.test", i)
		s.WriteFile(zones[i]+".db", bindtest.SeedZone(zones[i], 1))
	}
	return s, zones
}

func addzoneCmd(z string) string {
	return fmt.Sprintf(`addzone %s { type primary; file "%s.db"; };`, z, z)
}
