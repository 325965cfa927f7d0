package validate

import (
	"strings"
	"testing"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

const seedHead = "$ORIGIN example.test.\n$TTL 300\n@ SOA ns1 hostmaster 7 300 60 1209600 60\n@ NS ns1\nns1 A 192.0.2.1\n"

func TestSeed(t *testing.T) {
	for _, tc := range []struct {
		desc, file, want string
		records          int
	}{
		{desc: "a zone file", file: seedHead + "www 60 IN A 192.0.2.2\nh1 A 192.0.2.1\n", records: 5},
		{desc: "$GENERATE", file: seedHead + "$GENERATE 1-65535 h$ A 192.0.2.1\n", want: "line 6 is a $GENERATE"},
		{desc: "$generate", file: seedHead + "www A 192.0.2.2\n$generate 1-65535 h$ A 192.0.2.1\n", want: "line 7 is a $GENERATE"},
		{desc: "an owner spelt like the directive", file: seedHead + "generate A 192.0.2.1\n$GENERATED A 192.0.2.1\n", want: "line 7 is a $GENERATE"},
		{desc: "an owner that starts like it", file: seedHead + "generate A 192.0.2.1\n", records: 4},
		{desc: "no NS at the apex", file: "$ORIGIN example.test.\n@ 300 SOA ns1 hostmaster 7 300 60 1209600 60\nwww 300 A 192.0.2.1\n", want: "has no NS record at example.test."},
		{desc: "any type named serves", file: seedHead + "@ LOC 52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m\n", records: 4},
		{desc: "$INCLUDE", file: seedHead + "$INCLUDE /etc/passwd\n", want: "$INCLUDE"},
		{desc: "a name outside the zone", file: seedHead + "www.example.org. A 192.0.2.2\n", want: "record 4 (A) lies outside the zone example.test"},
		{desc: "no SOA", file: "$ORIGIN example.test.\n@ 300 NS ns1\n", want: "has 0 SOA records"},
		{desc: "two SOAs", file: seedHead + "@ SOA ns1 hostmaster 8 300 60 1209600 60\n", want: "has 2 SOA records"},
		{desc: "an SOA below the apex", file: seedHead + "sub SOA ns1 hostmaster 8 300 60 1209600 60\n", want: "record 4 is an SOA below the apex"},
		{desc: "a NUL byte", file: seedHead + "www A 192.0.2.2\x00\n", want: "line 6 holds the control byte 0x00"},
		{desc: "a line that does not parse", file: seedHead + "www A 192.0.2.300\n", want: "bad A"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			st, err := Seed("example.test", strings.NewReader(tc.file))
			if tc.want == "" {
				if err != nil || st.Records != tc.records || st.Serial != 7 {
					t.Fatalf("got %+v, %v; want %d records, serial 7", st, err, tc.records)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if !IsValidation(err) {
				t.Fatalf("%v is not a validation error", err)
			}
		})
	}
}

func TestSHA256Hex(t *testing.T) {
	if err := SHA256Hex(SeedDigest([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"", strings.Repeat("A", 64), strings.Repeat("a", 63), strings.Repeat("g", 64)} {
		if SHA256Hex(s) == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// The agent's bound on a streamed seed is the API's bound on a seed.
func TestSeedBoundsAgree(t *testing.T) {
	if agent.MaxSeedFileBytes != v1alpha1.MaxSeedBytes {
		t.Fatalf("agent.MaxSeedFileBytes %d, v1alpha1.MaxSeedBytes %d", agent.MaxSeedFileBytes, v1alpha1.MaxSeedBytes)
	}
}

// FuzzSeed: any bytes are refused or accepted, never a panic, and an
// accepted file has its one SOA.
func FuzzSeed(f *testing.F) {
	f.Add(seedHead)
	f.Add(seedHead + "$GENERATE 1-3 h$ A 192.0.2.$\n")
	f.Add("$INCLUDE x\n")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := Seed("example.test", strings.NewReader(s))
		if err == nil && st.Records < 1 {
			t.Fatalf("accepted %q with %d records", s, st.Records)
		}
	})
}
