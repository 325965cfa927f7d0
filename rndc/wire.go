package rndc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// The control channel carries BIND's "isccc" messages. A frame on the TCP
// stream is a big-endian u32 length followed by that many bytes of payload;
// the payload is a u32 protocol version (1) and then the entries of the
// top-level table, back to back, with no length of their own.
//
// An entry is: u8 key length, key bytes, u8 value type, u32 value length,
// value bytes. A table value is again a run of entries; a list value is a
// run of (type, length, value) triples without keys; a binary value is raw
// bytes (BIND stores strings and decimal numbers as binary).

const (
	protocolVersion = 1

	typeBinary = 1
	typeTable  = 2
	typeList   = 3

	// maxDepth bounds nesting while decoding. BIND's own messages are two
	// levels deep; anything deeper is hostile or broken.
	maxDepth = 16
	// maxValues bounds the number of values decoded from one frame, so a
	// frame of tiny entries cannot become a large allocation of Go structs.
	maxValues = 1 << 16
)

// Value is one node of a message: Binary, Table or List.
type Value interface{ isValue() }

// Binary is a leaf: BIND's strings and numbers travel as binary data.
type Binary []byte

// Table is an ordered association list. Order matters on the wire: the
// _auth entry must come first because the signature covers what follows.
type Table []Entry

// Entry is one key/value pair of a Table.
type Entry struct {
	Key   string
	Value Value
}

// List is an ordered list of values without keys.
type List []Value

func (Binary) isValue() {}
func (Table) isValue()  {}
func (List) isValue()   {}

// Get returns the value stored under key, or nil.
func (t Table) Get(key string) Value {
	for _, e := range t {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}

// String returns the binary value under key as a string.
func (t Table) String(key string) (string, bool) {
	b, ok := t.Get(key).(Binary)
	return string(b), ok
}

// Table returns the table under key.
func (t Table) Table(key string) (Table, bool) {
	v, ok := t.Get(key).(Table)
	return v, ok
}

// Uint32 returns the decimal number under key. Unlike BIND's strtoul it
// rejects anything that is not a plain decimal u32, so garbage is not read
// as 0.
func (t Table) Uint32(key string) (uint32, bool) {
	s, ok := t.String(key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return uint32(n), true
}

func str(s string) Binary           { return Binary(s) }
func num(n uint32) Binary           { return Binary(strconv.FormatUint(uint64(n), 10)) }
func entry(k string, v Value) Entry { return Entry{Key: k, Value: v} }

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("rndc: malformed message")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// appendEntries encodes the entries of t (without a table header).
func appendEntries(dst []byte, t Table) ([]byte, error) {
	for _, e := range t {
		if len(e.Key) == 0 || len(e.Key) > 255 {
			return nil, fmt.Errorf("rndc: key %q: length must be 1..255", e.Key)
		}
		dst = append(dst, byte(len(e.Key)))
		dst = append(dst, e.Key...)
		var err error
		if dst, err = appendValue(dst, e.Value); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

func appendValue(dst []byte, v Value) ([]byte, error) {
	switch v := v.(type) {
	case Binary:
		dst = append(dst, typeBinary)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		return append(dst, v...), nil
	case Table, List:
		typ := byte(typeTable)
		if _, ok := v.(List); ok {
			typ = typeList
		}
		dst = append(dst, typ, 0, 0, 0, 0)
		start := len(dst)
		var err error
		if t, ok := v.(Table); ok {
			dst, err = appendEntries(dst, t)
		} else {
			for _, lv := range v.(List) {
				if dst, err = appendValue(dst, lv); err != nil {
					break
				}
			}
		}
		if err != nil {
			return nil, err
		}
		binary.BigEndian.PutUint32(dst[start-4:start], uint32(len(dst)-start))
		return dst, nil
	default:
		return nil, fmt.Errorf("rndc: cannot encode %T", v)
	}
}

// decoded is a payload taken apart: the top-level table, plus where the
// signed bytes start (just after a leading _auth entry; -1 without one).
type decoded struct {
	table      Table
	signedFrom int
}

// Decode parses one frame payload (everything after the u32 length prefix).
// It trusts nothing: every length is checked against the bytes that remain
// before anything is sliced or allocated, nesting and value counts are
// bounded, duplicate keys and unknown types are rejected. It never panics.
func Decode(payload []byte) (Table, error) {
	d, err := decode(payload)
	return d.table, err
}

func decode(payload []byte) (decoded, error) {
	if len(payload) < 4 {
		return decoded{}, malformed("payload of %d bytes has no version", len(payload))
	}
	if v := binary.BigEndian.Uint32(payload); v != protocolVersion {
		return decoded{}, malformed("protocol version %d", v)
	}
	dec := decoder{buf: payload}
	t, signedFrom, err := dec.entries(4, len(payload), 0, true)
	if err != nil {
		return decoded{}, err
	}
	return decoded{table: t, signedFrom: signedFrom}, nil
}

type decoder struct {
	buf    []byte
	values int
}

// entries decodes the table entries in buf[off:end]. When top is set it
// also reports where the bytes after a leading _auth entry begin.
func (d *decoder) entries(off, end, depth int, top bool) (Table, int, error) {
	if depth > maxDepth {
		return nil, 0, malformed("nesting deeper than %d", maxDepth)
	}
	var t Table
	signedFrom := -1
	seen := make(map[string]struct{})
	for off < end {
		klen := int(d.buf[off])
		off++
		if klen == 0 || klen > end-off {
			return nil, 0, malformed("key length %d with %d bytes left", klen, end-off)
		}
		key := string(d.buf[off : off+klen])
		off += klen
		if _, dup := seen[key]; dup {
			return nil, 0, malformed("duplicate key %q", key)
		}
		seen[key] = struct{}{}
		v, next, err := d.value(off, end, depth)
		if err != nil {
			return nil, 0, fmt.Errorf("%w (in %q)", err, key)
		}
		off = next
		if top && len(t) == 0 && key == "_auth" {
			signedFrom = off
		}
		t = append(t, entry(key, v))
	}
	return t, signedFrom, nil
}

// value decodes one (type, length, bytes) triple starting at off.
func (d *decoder) value(off, end, depth int) (Value, int, error) {
	if d.values++; d.values > maxValues {
		return nil, 0, malformed("more than %d values", maxValues)
	}
	if end-off < 5 {
		return nil, 0, malformed("value header truncated")
	}
	typ := d.buf[off]
	n := binary.BigEndian.Uint32(d.buf[off+1 : off+5])
	off += 5
	if uint64(n) > uint64(end-off) {
		return nil, 0, malformed("value length %d with %d bytes left", n, end-off)
	}
	vend := off + int(n)
	switch typ {
	case typeBinary:
		return Binary(d.buf[off:vend:vend]), vend, nil
	case typeTable:
		t, _, err := d.entries(off, vend, depth+1, false)
		if t == nil && err == nil {
			t = Table{}
		}
		return t, vend, err
	case typeList:
		if depth+1 > maxDepth {
			return nil, 0, malformed("nesting deeper than %d", maxDepth)
		}
		l := List{}
		for p := off; p < vend; {
			v, next, err := d.value(p, vend, depth+1)
			if err != nil {
				return nil, 0, err
			}
			l = append(l, v)
			p = next
		}
		return l, vend, nil
	default:
		return nil, 0, malformed("unknown value type %d", typ)
	}
}
