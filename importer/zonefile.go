package importer

import (
	"bufio"
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
// $ORIGIN, $TTL, $INCLUDE and $GENERATE, relative names, and every record
// type the DNS library knows (unknown types in RFC 3597 form too). name is
// the path as named.conf gives it, workdir named's working directory (its
// options { directory }), both as the server sees them; errors carry
// file:line.
func ReadZoneFile(root, workdir, name, origin string) (*ZoneData, error) {
	// Every path, $INCLUDE's too, is opened inside root: a zone file can
	// name no file outside the server's copy.
	fsys := includeFS{root: os.DirFS(root), workdir: path.Clean("/" + workdir), ttls: map[string]uint32{}, last: &lastRead{}}
	if !path.IsAbs(name) {
		name = path.Join(fsys.workdir, name) // named's "file" is relative to its directory
	}
	name = path.Clean("/" + name)
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
		// The library reads byte by byte (zoneFile is a ByteReader) and
		// returns a record once it has read the line that ends it: the
		// last byte read says where the record is, $INCLUDEd files too.
		// A record written over several lines ("( ... )") is reported at
		// its last; a $GENERATE's records at the $GENERATE.
		pos := Pos{File: name}
		if f := fsys.last.file; f != nil {
			pos = Pos{File: f.name, Line: f.lastLine}
		}
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

// includeFS opens zone files inside root, bounded in size, and rewrites
// two directives on the way to the DNS library so it reads them as named
// does:
//
//   - a relative $INCLUDE is made absolute against named's working
//     directory (named resolves it there, the library against the
//     including file);
//   - a $GENERATE without a TTL gets the $TTL in effect (the library gives
//     its generated records 3600, named the zone's default TTL).
type includeFS struct {
	root    fs.FS
	workdir string
	// ttls is the $TTL in effect at each $INCLUDE line, by the path it
	// opens: an included file starts with its includer's default.
	ttls map[string]uint32
	// last is the file the DNS library read its last byte from.
	last *lastRead
}

// lastRead is where the DNS library's last byte came from.
type lastRead struct {
	file *zoneFile
}

func (i includeFS) Open(name string) (fs.File, error) {
	f, err := i.root.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if st.Size() > maxZoneFileBytes {
		_ = f.Close()
		return nil, fmt.Errorf("/%s: %d bytes, more than the %d this reads", name, st.Size(), maxZoneFileBytes)
	}
	zf := &zoneFile{File: f, r: bufio.NewReader(f), fs: i, name: "/" + strings.TrimLeft(name, "/")}
	if ttl, ok := i.ttls["/"+strings.TrimLeft(name, "/")]; ok {
		zf.ttl = &ttl
	}
	return zf, nil
}

// zoneFile reads a zone file line by line, rewriting directives (one
// line into one line, so line numbers hold), and counts lines.
type zoneFile struct {
	fs.File
	r       *bufio.Reader
	fs      includeFS
	name    string  // as the server sees it
	ttl     *uint32 // the $TTL in effect, when known
	pending []byte
	// newlines read so far, and the line of the last byte read.
	newlines, lastLine int
}

// fill makes sure pending holds the next bytes, unless the file is done.
func (f *zoneFile) fill() error {
	for len(f.pending) == 0 {
		line, err := f.r.ReadBytes('\n')
		f.pending = f.rewrite(line)
		if err != nil {
			if len(f.pending) > 0 {
				return nil
			}
			return err
		}
	}
	return nil
}

func (f *zoneFile) Read(p []byte) (int, error) {
	if err := f.fill(); err != nil {
		return 0, err
	}
	n := copy(p, f.pending)
	for _, b := range f.pending[:n] {
		f.count(b)
	}
	f.pending = f.pending[n:]
	return n, nil
}

// ReadByte is what the DNS library reads with: one byte at a time, so the
// lines counted are the lines it has parsed.
func (f *zoneFile) ReadByte() (byte, error) {
	if err := f.fill(); err != nil {
		return 0, err
	}
	b := f.pending[0]
	f.pending = f.pending[1:]
	f.count(b)
	return b, nil
}

func (f *zoneFile) count(b byte) {
	f.lastLine = f.newlines + 1
	if b == '\n' {
		f.newlines++
	}
	f.fs.last.file = f
}

// rewrite returns the line as the DNS library should read it.
func (f *zoneFile) rewrite(line []byte) []byte {
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return line
	}
	switch strings.ToUpper(fields[0]) {
	case "$TTL":
		if len(fields) > 1 {
			if ttl, ok := parseTTL(fields[1]); ok {
				f.ttl = &ttl
			}
		}
	case "$INCLUDE":
		out := rewriteInclude(line, f.fs.workdir)
		if inc := strings.Fields(string(out)); len(inc) > 1 && f.ttl != nil {
			f.fs.ttls[strings.Trim(inc[1], `"`)] = *f.ttl
		}
		return out
	case "$GENERATE":
		// $GENERATE range lhs [ttl] [class] type rhs
		if len(fields) > 3 && f.ttl != nil {
			if _, explicit := parseTTL(fields[3]); !explicit {
				return []byte(fmt.Sprintf("$GENERATE %s %s %d %s\n", fields[1], fields[2], *f.ttl, strings.Join(fields[3:], " ")))
			}
		}
	}
	return line
}

// rewriteInclude makes the file of an "$INCLUDE file [origin]" line
// absolute against workdir; other lines are returned as they are.
func rewriteInclude(line []byte, workdir string) []byte {
	const directive = "$include"
	if len(line) <= len(directive) || !strings.EqualFold(string(line[:len(directive)]), directive) || (line[len(directive)] != ' ' && line[len(directive)] != '\t') {
		return line
	}
	rest := strings.TrimLeft(string(line[len(directive):]), " \t")
	quoted := strings.HasPrefix(rest, `"`)
	var file, tail string
	if quoted {
		end := strings.IndexByte(rest[1:], '"')
		if end < 0 {
			return line
		}
		file, tail = rest[1:end+1], rest[end+2:]
	} else {
		end := strings.IndexAny(rest, " \t\r\n;")
		if end < 0 {
			end = len(rest)
		}
		file, tail = rest[:end], rest[end:]
	}
	if file == "" || path.IsAbs(file) {
		return line
	}
	return []byte("$INCLUDE " + path.Join(workdir, file) + tail)
}

// parseTTL reads a TTL as zone files write it: seconds, or a sum of
// numbers with the units w, d, h, m and s ("1h30m", "2W").
func parseTTL(s string) (uint32, bool) {
	var total, n uint64
	digits := false
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + uint64(c-'0')
			digits = true
		case strings.ContainsRune("wdhms", c) && digits:
			total += n * map[rune]uint64{'w': 604800, 'd': 86400, 'h': 3600, 'm': 60, 's': 1}[c]
			n, digits = 0, false
		default:
			return 0, false
		}
		if total+n > 1<<32-1 {
			return 0, false
		}
	}
	if s == "" {
		return 0, false
	}
	return uint32(total + n), true
}
