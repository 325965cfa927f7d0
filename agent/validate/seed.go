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

// Seed parses a zone file for zone (canonical, without the trailing dot)
// and checks that named can load it as that zone: every line parses, no
// $INCLUDE, every owner lies inside the zone, and the apex has exactly
// one SOA. Lines are printable text. Refusals name the line; they quote
// the parser's reason, which may quote the token at fault.
func Seed(zone string, r io.Reader) (SeedStats, error) {
	apex := dns.Fqdn(zone)
	var st SeedStats
	br := bufio.NewReader(r)
	// The parser reads what the check lets through: it refuses bytes
	// that are not text before the parser sees them.
	zp := dns.NewZoneParser(&textOnly{r: br}, apex, "")
	zp.SetIncludeAllowed(false)
	soas := 0
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		h := rr.Header()
		if !dns.IsSubDomain(apex, h.Name) {
			return st, fail("seed", "record %d (%s) lies outside the zone %s; named ignores such data, remove it", st.Records+1, dns.TypeToString[h.Rrtype], zone)
		}
		if soa, ok := rr.(*dns.SOA); ok {
			if !strings.EqualFold(h.Name, apex) {
				return st, fail("seed", "record %d is an SOA below the apex; only %s has one", st.Records+1, apex)
			}
			soas++
			st.Serial = soa.Serial
		}
		st.Records++
	}
	if err := zp.Err(); err != nil {
		return st, fail("seed", "%s", clipLong(err.Error()))
	}
	if soas != 1 {
		return st, fail("seed", "has %d SOA records at %s; a zone file has exactly one", soas, apex)
	}
	return st, nil
}

// textOnly passes text through and fails on any other byte: a NUL or a
// control character other than tab, CR and LF is no zone file.
type textOnly struct {
	r    io.Reader
	line int
}

func (t *textOnly) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			t.line++
		}
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return i, fmt.Errorf("line %d holds the control byte 0x%02x; a zone file is text", t.line+1, c)
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
