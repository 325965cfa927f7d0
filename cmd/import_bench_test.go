package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/importer"
)

// recordsPerZone is the size of each zone of BenchmarkImport's servers.
const recordsPerZone = 100

// BenchmarkImport times `bind-operator import --validate` over a server
// of 1,000 and of 10,000 zones of 100 records each (100,000 and 1,000,000
// records), everything the command does (named-checkconf over
// named.conf, every zone file read, the objects checked by the admission
// rules and written), against the baseline of `named-checkconf -z` loading
// the same zones, timed once per size in the same run. records/s at both
// sizes says whether the import stays linear.
//
//	go test -run '^$' -bench Import -benchtime 1x ./cmd/
func BenchmarkImport(b *testing.B) {
	checkconf, err := exec.LookPath("named-checkconf")
	if err != nil {
		b.Fatal("named-checkconf not found: run `make deps` (BIND 9.18 from Debian)")
	}
	for _, zones := range []int{1000, 10000} {
		dir := b.TempDir()
		var conf string
		var baseline time.Duration
		b.Run(fmt.Sprintf("zones=%d,records=%d", zones, zones*recordsPerZone), func(b *testing.B) {
			// Once per size, however often the benchmark runs this.
			if conf == "" {
				conf = writeBenchServer(b, dir, zones)
				start := time.Now()
				if out, err := exec.Command(checkconf, "-z", conf).CombinedOutput(); err != nil {
					b.Fatalf("named-checkconf -z: %v: %s", err, out)
				}
				baseline = time.Since(start)
			}
			out := filepath.Join(dir, "out")
			for b.Loop() {
				if code := runImport([]string{"--config", conf, "--namespace", "dns", "--cluster", "c", "--out", out, "--validate"}, io.Discard); code != importer.Whole {
					b.Fatalf("import: status %d", code)
				}
			}
			per := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(per, "s/import")
			b.ReportMetric(float64(zones*recordsPerZone)/per, "records/s")
			b.ReportMetric(baseline.Seconds(), "s/checkconf-z")
			b.ReportMetric(per/baseline.Seconds(), "x-checkconf-z")
		})
	}
}

// writeBenchServer writes a server's named.conf and zone files into dir,
// with absolute paths (the import reads it with --root /), and returns
// named.conf's path.
func writeBenchServer(b *testing.B, dir string, zones int) string {
	b.Helper()
	zdir := filepath.Join(dir, "zones")
	if err := os.MkdirAll(zdir, 0o755); err != nil {
		b.Fatal(err)
	}
	conf := filepath.Join(dir, "named.conf")
	cf, err := os.Create(conf)
	if err != nil {
		b.Fatal(err)
	}
	cw := bufio.NewWriter(cf)
	fmt.Fprintf(cw, "options { directory %q; recursion no; };\n", zdir)
	for i := range zones {
		name := fmt.Sprintf("zone%05d.example", i)
		file := filepath.Join(zdir, "db."+name)
		fmt.Fprintf(cw, "zone %q { type primary; file %q; };\n", name, file)
		writeBenchZone(b, file, i)
	}
	if err := cw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := cf.Close(); err != nil {
		b.Fatal(err)
	}
	return conf
}

// writeBenchZone writes one zone of recordsPerZone records: SOA, two NS
// with their addresses, then A, AAAA, MX, TXT and CNAME records in turn.
func writeBenchZone(b *testing.B, file string, n int) {
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "$TTL 3600\n@ IN SOA ns1 hostmaster %d 3600 600 86400 300\n@ IN NS ns1\n@ IN NS ns2\nns1 IN A 192.0.2.1\nns2 IN A 192.0.2.2\n", n+1)
	for i := range recordsPerZone - 5 {
		switch i % 5 {
		case 0:
			fmt.Fprintf(w, "h%d IN A 198.51.100.%d\n", i, i%250+1)
		case 1:
			fmt.Fprintf(w, "h%d IN AAAA 2001:db8::%x\n", i, i+1)
		case 2:
			fmt.Fprintf(w, "h%d IN MX 10 mail%d\n", i, i)
		case 3:
			fmt.Fprintf(w, "h%d IN TXT \"v=spf1 -all %d\"\n", i, i)
		case 4:
			fmt.Fprintf(w, "h%d IN CNAME h%d\n", i, i-4)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
