package dnsclient

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkUpdate measures records/s for one zone on a real named over
// TCP: 10,000 records per iteration in batches of 50 (external-dns'
// size), 500 and 1,000, against 500 single-record UPDATEs. Each variant
// runs on a disk-backed data dir (t.TempDir(), journal fsyncs hit the
// disk) and on tmpfs (/dev/shm). Every change is an Upsert of one A record
// (delete RRset + add), the external-dns shape.
//
//	go test -run '^$' -bench Update -benchtime 3x ./dnsclient/
func BenchmarkUpdate(b *testing.B) {
	for _, dir := range []struct {
		name  string
		tmpfs bool
	}{{"disk", false}, {"tmpfs", true}} {
		for _, v := range []struct {
			name    string
			batch   int
			records int
		}{{"batch50", 50, 10000}, {"batch500", 500, 10000}, {"batch1000", 1000, 10000}, {"single", 1, 500}} {
			b.Run(dir.name+"/"+v.name, func(b *testing.B) {
				s, k := server(b, dir.tmpfs)
				c := client(b, s, k)
				c.opts.BatchSize = v.batch
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				changes := make([][]Change, b.N)
				for it := range changes {
					changes[it] = make([]Change, v.records)
					for i := range changes[it] {
						changes[it][i] = Change{Op: Upsert, Set: a(fmt.Sprintf("r%d-%d", it, i), 300, fmt.Sprintf("198.18.%d.%d", i/256%256, i%256))}
					}
				}
				msgs := 0
				b.ResetTimer()
				for it := 0; it < b.N; it++ {
					res, err := c.Apply(ctx, zone, changes[it])
					if err != nil || res.Applied != v.records {
						b.Fatalf("apply: %v, %d applied", err, res.Applied)
					}
					msgs += res.Messages
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*v.records)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(float64(msgs)/float64(b.N), "msgs/op")
			})
		}
	}
}
