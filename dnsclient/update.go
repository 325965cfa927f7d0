package dnsclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// RRSet is one record set: all records of one name and type.
type RRSet struct {
	Name   string   // owner, fully qualified or relative to the zone
	Type   uint16   // dns.TypeA, ...
	TTL    uint32   // for additions
	Values []string // rdata in zone-file presentation, e.g. "192.0.2.1"
}

func (s RRSet) String() string {
	return fmt.Sprintf("%s %s", s.Name, dns.TypeToString[s.Type])
}

// Op says what a Change does and which prerequisite guards it.
type Op int

const (
	// Create adds Set only if no RRset of its name and type exists
	// (prerequisite "RRset does not exist"); otherwise YXRRSET.
	Create Op = iota
	// Replace swaps the RRset for Set only if it still holds exactly Prev,
	// what we last wrote (prerequisite "RRset exists, value dependent");
	// otherwise NXRRSET. Someone else's edit is never overwritten blindly.
	Replace
	// Upsert makes the RRset equal Set whatever it holds now (delete the
	// RRset, add Set): last writer wins, as external-dns does.
	Upsert
	// Delete removes the RRset; if Prev is set, only while it still holds
	// exactly Prev.
	Delete
)

func (o Op) String() string {
	switch o {
	case Create:
		return "create"
	case Replace:
		return "replace"
	case Upsert:
		return "upsert"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Change is one guarded change to one RRset.
type Change struct {
	Op   Op
	Set  RRSet    // the desired RRset (for Delete: its name and type)
	Prev []string // for Replace (required) and Delete (optional): the values we last wrote
}

func (c Change) String() string { return c.Op.String() + " " + c.Set.String() }

// built is a change turned into wire records for one zone.
type built struct {
	prereq []dns.RR
	update []dns.RR // update[0] deletes the RRset (skipped for Create), the rest add
	size   int      // uncompressed wire size: an upper bound of what it adds to a message
}

// records counts what the change writes: the records it adds, or 1 for a
// deletion. Batch sizes are in these units, as external-dns counts them.
func (b built) records() int {
	if len(b.update) > 1 {
		return len(b.update) - 1
	}
	return 1
}

// build validates a change against zone and renders its records.
func (c Change) build(zone string) (built, error) {
	name := c.Set.Name
	if !dns.IsFqdn(name) {
		if name == "@" || name == "" {
			name = zone
		} else {
			name = name + "." + zone
		}
	}
	name = strings.ToLower(name)
	if _, ok := dns.IsDomainName(name); !ok {
		return built{}, fmt.Errorf("%v: %q is not a domain name", c, name)
	}
	if !dns.IsSubDomain(zone, name) {
		return built{}, fmt.Errorf("%v: %s is outside zone %s", c, name, zone)
	}
	switch c.Set.Type {
	case dns.TypeNone, dns.TypeANY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeOPT, dns.TypeTSIG, dns.TypeSOA:
		return built{}, fmt.Errorf("%v: type %d cannot be updated", c, c.Set.Type)
	}
	typ, ok := dns.TypeToString[c.Set.Type]
	if !ok {
		return built{}, fmt.Errorf("%v: unknown type %d", c, c.Set.Type)
	}
	rrs := func(values []string, ttl uint32) ([]dns.RR, error) {
		out := make([]dns.RR, 0, len(values))
		for _, v := range values {
			if strings.ContainsAny(v, "\n\r;") {
				return nil, fmt.Errorf("%v: value %q has a newline or comment", c, v)
			}
			rr, err := dns.NewRR(fmt.Sprintf("%s %d IN %s %s", name, ttl, typ, v))
			if err != nil || rr == nil {
				return nil, fmt.Errorf("%v: value %q: %v", c, v, err)
			}
			out = append(out, rr)
		}
		return out, nil
	}
	header := &dns.ANY{Hdr: dns.RR_Header{Name: name, Rrtype: c.Set.Type}}
	var b built
	switch c.Op {
	case Create, Upsert, Replace:
		if len(c.Set.Values) == 0 {
			return built{}, fmt.Errorf("%v: no values (use Delete)", c)
		}
		add, err := rrs(c.Set.Values, c.Set.TTL)
		if err != nil {
			return built{}, err
		}
		switch c.Op {
		case Create:
			b.prereq = []dns.RR{header} // class NONE: RRset does not exist
		case Replace:
			if len(c.Prev) == 0 {
				return built{}, fmt.Errorf("%v: Replace needs Prev (use Create or Upsert)", c)
			}
			if b.prereq, err = rrs(c.Prev, 0); err != nil {
				return built{}, err
			}
		}
		b.update = append([]dns.RR{header}, add...) // delete the RRset, then add
	case Delete:
		if len(c.Prev) > 0 {
			var err error
			if b.prereq, err = rrs(c.Prev, 0); err != nil {
				return built{}, err
			}
		}
		b.update = []dns.RR{header}
	default:
		return built{}, fmt.Errorf("%v: unknown op", c)
	}
	for _, rr := range append(b.prereq[:len(b.prereq):len(b.prereq)], b.update...) {
		b.size += dns.Len(rr)
	}
	return b, nil
}

// message assembles one UPDATE for zone from built changes. Classes follow
// RFC 2136: prerequisite "does not exist" is class NONE with no rdata,
// "exists (value dependent)" is the zone class with rdata; "delete RRset"
// is class ANY with no rdata.
func message(zone string, changes []built, creates []bool) *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate(zone)
	m.Compress = true
	for i, b := range changes {
		if creates[i] {
			m.RRsetNotUsed(b.prereq)
		} else if len(b.prereq) > 0 {
			m.Used(b.prereq)
		}
		if !creates[i] { // a Create's prerequisite already says the RRset is absent
			m.RemoveRRset(b.update[:1])
		}
		if len(b.update) > 1 {
			m.Insert(b.update[1:])
		}
	}
	return m
}

// Update sends changes to zone as one UPDATE message: all apply or none
// do. A refusal comes back as *RcodeError. For many changes, Apply batches
// them and tells which ones failed.
func (c *Client) Update(ctx context.Context, zone string, changes ...Change) error {
	zone = dns.Fqdn(strings.ToLower(zone))
	bs := make([]built, len(changes))
	creates := make([]bool, len(changes))
	for i, ch := range changes {
		b, err := ch.build(zone)
		if err != nil {
			return err
		}
		bs[i], creates[i] = b, ch.Op == Create
	}
	if err := checkDuplicates(changes, bs); err != nil {
		return err
	}
	return c.send(ctx, zone, bs, creates)
}

func (c *Client) send(ctx context.Context, zone string, bs []built, creates []bool) error {
	m := message(zone, bs, creates)
	n := 0
	for _, b := range bs {
		n += b.records()
	}
	start := time.Now()
	r, authErr, err := c.exchange(ctx, m)
	if err == nil {
		err = checkReply("update", zone, r, authErr)
	}
	c.logExchange(ctx, "dns update", zone, n, start, err)
	return err
}

// checkDuplicates rejects two changes to the same RRset in one message:
// RFC 2136 checks every prerequisite before applying any update, so their
// combined effect would not be what either change says.
func checkDuplicates(changes []Change, bs []built) error {
	seen := make(map[string]int, len(bs))
	for i, b := range bs {
		h := b.update[0].Header()
		k := h.Name + "/" + dns.TypeToString[h.Rrtype]
		if j, dup := seen[k]; dup {
			return fmt.Errorf("dnsclient: changes %d and %d both touch %s", j, i, k)
		}
		seen[k] = i
	}
	return nil
}

// errWholeMessage tells refusals that concern the message as a whole (key,
// authority, server state) from refusals caused by one record set.
func errWholeMessage(err error) bool {
	var re *RcodeError
	if !errors.As(err, &re) {
		return true // transport or verification failure
	}
	switch re.Rcode {
	case dns.RcodeNameError, dns.RcodeYXDomain, dns.RcodeYXRrset, dns.RcodeNXRrset,
		dns.RcodeNotZone, dns.RcodeRefused, dns.RcodeFormatError:
		return re.TSIGError != 0
	}
	return true
}
