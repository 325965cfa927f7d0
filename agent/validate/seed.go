package validate

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/miekg/dns"
)

// A seed is the zone file a large zone starts from (BindZone
// spec.seedFrom): the operator reads it from ConfigMaps and the agent writes
// it as the primary's zone file. Both sides check it here, the agent as
// input from the network: named would load whatever the file says, so a
// file that names another zone's data, pulls in other files ($INCLUDE), or
// holds no SOA is refused before it is written.

// SeedDigest is the lowercase hex SHA-256 the API names a seed by.
func SeedDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SHA256Hex checks a digest as the API spells it.
func SHA256Hex(s string) error {
	if len(s) != sha256.Size*2 {
		return fail("sha256", "must be 64 lowercase hex digits, got %d characters", len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fail("sha256", "must be 64 lowercase hex digits; character %d is not one", i+1)
		}
	}
	return nil
}

// SeedStats is what a checked seed holds.
type SeedStats struct {
	Records int
	Serial  uint32
}

// MaxSeedRecords bounds the records of a seed: a 14 MiB file of the
// shortest lines holds about a million.
const MaxSeedRecords = 2_000_000

// Seed parses a zone file for zone (canonical, without the trailing dot)
// and checks that named can load it as that zone: every line parses, no
// $INCLUDE or $GENERATE (a line of which makes up to 65,536 records: a
// small file would make billions; bind-operator import writes them out),
// every owner lies inside the zone, the apex has exactly one SOA and its
// NS records, and there are at most MaxSeedRecords. Lines are printable
// text. Refusals name the line or the record; a line that does not parse
// is refused with the parser's reason, which quotes the token at fault.
func Seed(zone string, r io.Reader) (SeedStats, error) {
	apex := dns.Fqdn(zone)
	var st SeedStats
	// The parser reads what the check lets through: it refuses bytes
	// that are not text, and directives that are not allowed, before the
	// parser sees them.
	zp := dns.NewZoneParser(&textOnly{r: bufio.NewReader(r), bol: true}, apex, "")
	zp.SetIncludeAllowed(false)
	soas, apexNS := 0, 0
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		h := rr.Header()
		if !dns.IsSubDomain(apex, h.Name) {
			return st, fail("seed", "record %d (%s) lies outside the zone %s; named ignores such data, remove it", st.Records+1, dns.TypeToString[h.Rrtype], zone)
		}
		atApex := strings.EqualFold(h.Name, apex)
		switch rr := rr.(type) {
		case *dns.SOA:
			if !atApex {
				return st, fail("seed", "record %d is an SOA below the apex; only %s has one", st.Records+1, apex)
			}
			soas++
			st.Serial = rr.Serial
		case *dns.NS:
			if atApex {
				apexNS++
			}
		}
		if st.Records++; st.Records > MaxSeedRecords {
			return st, fail("seed", "holds more than %d records", MaxSeedRecords)
		}
	}
	if err := zp.Err(); err != nil {
		return st, fail("seed", "%s", clipLong(err.Error()))
	}
	if soas != 1 {
		return st, fail("seed", "has %d SOA records at %s; a zone file has exactly one", soas, apex)
	}
	if apexNS == 0 {
		return st, fail("seed", "has no NS record at %s; named does not load a zone without one", apex)
	}
	return st, nil
}

// textOnly passes text through and fails on any other byte (a NUL or a
// control character other than tab, CR and LF is no zone file), and on a
// line that starts with $GENERATE.
type textOnly struct {
	r    io.Reader
	line int
	bol  bool   // at the beginning of a line
	head []byte // the line's first bytes, up to len(generate)
}

const generate = "$GENERATE"

func (t *textOnly) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	for i, c := range p[:n] {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return i, fmt.Errorf("line %d holds the control byte 0x%02x; a zone file is text", t.line+1, c)
		}
		if c == '\n' {
			t.line++
			t.bol, t.head = true, t.head[:0]
			continue
		}
		if !t.bol {
			continue
		}
		t.head = append(t.head, c)
		if !strings.EqualFold(string(t.head), generate[:len(t.head)]) {
			t.bol = false
		} else if len(t.head) == len(generate) {
			return i, fmt.Errorf("line %d is a $GENERATE; write the records it makes instead (bind-operator import does)", t.line+1)
		}
	}
	return n, err
}

func clipLong(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
