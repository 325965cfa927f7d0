package dnsclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

const (
	// DefaultBatchSize is the most records written per UPDATE (added
	// records; a deletion counts one). Measured on BIND 9.18 over TCP
	// (BenchmarkUpdate; docs/bind-facts.md, "Measured limits"): 500
	// records per message runs about twice as fast as external-dns' 50,
	// and 1,000 gains little over 500 while doubling what a failed batch
	// has to bisect.
	DefaultBatchSize = 500
	// DefaultMaxMessageSize keeps an UPDATE well under the 64 KiB DNS/TCP
	// message limit, leaving room for the TSIG record.
	DefaultMaxMessageSize = 60000
)

// ChangeError reports one change that did not apply.
type ChangeError struct {
	Index  int    // position in the slice given to Apply
	Change Change // the change itself
	Err    error  // *RcodeError, a validation error, or the transport error
}

func (e *ChangeError) Error() string {
	return fmt.Sprintf("change %d (%v): %v", e.Index, e.Change, e.Err)
}
func (e *ChangeError) Unwrap() error { return e.Err }

// BatchResult summarises an Apply.
type BatchResult struct {
	Applied  int           // changes that took effect
	Failed   []ChangeError // changes that did not, in input order
	Messages int           // UPDATE messages sent (batches plus isolation)
}

// Err returns nil when every change applied, else an error joining them.
func (r BatchResult) Err() error {
	if len(r.Failed) == 0 {
		return nil
	}
	errs := make([]error, len(r.Failed))
	for i := range r.Failed {
		errs[i] = &r.Failed[i]
	}
	return errors.Join(errs...)
}

// Apply sends changes to zone in as few UPDATE messages as the batch limits
// allow, and reports per change what failed so the rest still applies.
//
// How it works:
//
//  1. Each change is validated and rendered on its own; invalid ones fail
//     without being sent, and two changes to the same RRset are refused.
//  2. The rest are packed in order into messages of at most BatchSize
//     records and MaxMessageSize bytes (checked on the compressed size).
//  3. A message is atomic (RFC 2136): one failed prerequisite rejects all
//     of it. When named rejects a batch for a reason that belongs to a
//     record set (YXRRSET, NXRRSET, NOTZONE, REFUSED by update-policy, ...)
//     the batch is split in halves and each half re-sent, recursively,
//     down to single changes. The good halves apply; each failing set is
//     isolated with its own rcode. k bad sets in a batch of n cost about
//     2·k·log2(n) extra messages instead of n.
//  4. A failure that concerns every message alike (TSIG/NOTAUTH, SERVFAIL,
//     transport or context errors) stops the run: that batch and all later
//     ones are reported failed with that error, and it is also returned.
//
// Changes in different batches are independent; a caller that needs two
// changes to land together puts them in one Update.
func (c *Client) Apply(ctx context.Context, zone string, changes []Change) (BatchResult, error) {
	zone = dns.Fqdn(strings.ToLower(zone))
	var res BatchResult
	type item struct {
		idx    int
		b      built
		create bool
	}
	items := make([]item, 0, len(changes))
	seen := make(map[string]int, len(changes))
	for i, ch := range changes {
		b, err := ch.build(zone)
		if err == nil {
			h := b.update[0].Header()
			k := h.Name + "/" + dns.TypeToString[h.Rrtype]
			if j, dup := seen[k]; dup {
				err = fmt.Errorf("dnsclient: %s is also changed by change %d", k, j)
			}
			seen[k] = i
		}
		if err != nil {
			res.Failed = append(res.Failed, ChangeError{Index: i, Change: ch, Err: err})
			continue
		}
		items = append(items, item{idx: i, b: b, create: ch.Op == Create})
	}

	// sendItems sends one message; on a per-set refusal it bisects.
	var fatal error
	var sendItems func(its []item)
	sendItems = func(its []item) {
		if fatal != nil {
			for _, it := range its {
				res.Failed = append(res.Failed, ChangeError{Index: it.idx, Change: changes[it.idx], Err: fatal})
			}
			return
		}
		bs := make([]built, len(its))
		cr := make([]bool, len(its))
		for i, it := range its {
			bs[i], cr[i] = it.b, it.create
		}
		res.Messages++
		err := c.send(ctx, zone, bs, cr)
		switch {
		case err == nil:
			res.Applied += len(its)
		case errWholeMessage(err):
			fatal = err
			sendItems(its)
		case len(its) == 1:
			res.Failed = append(res.Failed, ChangeError{Index: its[0].idx, Change: changes[its[0].idx], Err: err})
		default:
			sendItems(its[:len(its)/2])
			sendItems(its[len(its)/2:])
		}
	}

	for start := 0; start < len(items); {
		end := c.packBatch(zone, len(items)-start, func(i int) (built, bool) {
			return items[start+i].b, items[start+i].create
		})
		sendItems(items[start : start+end])
		start += end
	}
	sortFailed(res.Failed)
	return res, fatal
}

// packBatch returns how many of the next n changes fit in one message. It
// counts records against BatchSize and bytes against MaxMessageSize. The
// uncompressed size is a cheap upper bound; only when the bound passes the
// limit is the real compressed size measured, so a batch of names sharing
// the zone suffix is not cut at half of what fits.
func (c *Client) packBatch(zone string, n int, get func(i int) (built, bool)) int {
	const header = 12 + 512 // DNS header, zone section, TSIG with the longest names
	records, bound := 0, header
	var bs []built
	var cr []bool
	for i := 0; i < n; i++ {
		b, create := get(i)
		if i > 0 && records+b.records() > c.opts.BatchSize {
			return i
		}
		records += b.records()
		bound += b.size
		bs, cr = append(bs, b), append(cr, create)
		if bound > c.opts.MaxMessageSize {
			exact := message(zone, bs, cr).Len() + header
			if exact > c.opts.MaxMessageSize {
				if i == 0 {
					return 1 // a single oversized change goes alone and fails on its own
				}
				return i
			}
			bound = exact
		}
	}
	return n
}

func sortFailed(f []ChangeError) {
	slices.SortStableFunc(f, func(a, b ChangeError) int { return a.Index - b.Index })
}
