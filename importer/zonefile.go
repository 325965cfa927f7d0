package importer

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/miekg/dns"
)

// maxZoneFileBytes bounds one zone file and what it includes.
const maxZoneFileBytes = 1 << 30

// ZoneData is what a zone file holds, read with the zone's origin.
type ZoneData struct {
	SOA     *dns.SOA
	Records []PosRR // every record but the apex SOA, in file order
}

// PosRR is a record and where the file wrote it.
type PosRR struct {
	RR  dns.RR
	Pos Pos
}

// ReadZoneFile parses a zone file as named would load it for origin:
// $ORIGIN, $TTL, $INCLUDE (paths resolved inside root, as named.conf's)
// and $GENERATE, relative names, and every record type the DNS library
// knows (unknown types in RFC 3597 form too). name is the path as
// named.conf gives it; errors carry file:line.
func ReadZoneFile(root, name, origin string) (*ZoneData, error) {
	// Every path, $INCLUDE's too, is opened inside root: a zone file can
	// name no file outside the server's copy. A relative $INCLUDE is
	// relative to the including file (named's is relative to its working
	// directory, which is where zone files usually are).
	fsys := os.DirFS(root)
	name = path.Clean("/" + name)
	st, err := fs.Stat(fsys, name[1:])
	if err != nil {
		return nil, err
	}
	if st.Size() > maxZoneFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d this reads", name, st.Size(), maxZoneFileBytes)
	}
	f, err := fsys.Open(name[1:])
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	zp := dns.NewZoneParser(f, dns.Fqdn(origin), name)
	zp.SetIncludeAllowed(true)
	zp.SetIncludeFS(fsys)
	// $INCLUDE and $GENERATE are bounded by the library: includes nest at
	// most 7 deep and a $GENERATE range is at most 65,535 steps.
	out := &ZoneData{}
	apex := dns.CanonicalName(origin)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		pos := Pos{File: name, Line: 0}
		if soa, isSOA := rr.(*dns.SOA); isSOA && dns.CanonicalName(rr.Header().Name) == apex {
			if out.SOA != nil {
				continue // named keeps the first
			}
			out.SOA = soa
			continue
		}
		out.Records = append(out.Records, PosRR{RR: rr, Pos: pos})
	}
	if err := zp.Err(); err != nil {
		return nil, err
	}
	if out.SOA == nil {
		return nil, fmt.Errorf("%s: no SOA record at the apex %s", name, origin)
	}
	return out, nil
}

// Presentation is a record's data in zone-file presentation format: the
// text after its owner, TTL, class and type.
func Presentation(rr dns.RR) string {
	return strings.TrimSpace(strings.TrimPrefix(rr.String(), rr.Header().String()))
}
