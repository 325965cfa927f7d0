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
	fsys := includeFS{root: os.DirFS(root), workdir: path.Clean("/" + workdir)}
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

// includeFS opens zone files inside root, bounded in size, with every
// relative $INCLUDE made absolute against named's working directory:
// named resolves it there, the DNS library against the including file.
type includeFS struct {
	root    fs.FS
	workdir string
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
	return &includeFile{File: f, r: bufio.NewReader(f), workdir: i.workdir}, nil
}

// includeFile reads a zone file line by line, rewriting relative $INCLUDE
// lines.
type includeFile struct {
	fs.File
	r       *bufio.Reader
	workdir string
	pending []byte
}

func (f *includeFile) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.r.ReadBytes('\n')
		f.pending = rewriteInclude(line, f.workdir)
		if err != nil {
			if len(f.pending) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
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
