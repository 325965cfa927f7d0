// Package batch coalesces the operator's concurrent small writes into few
// large ones, where the other side applies them one at a time anyway:
//
//   - Updates merges record changes into one RFC 2136 UPDATE per zone as a
//     group commit: BIND applies a 500-record UPDATE about 30 times faster
//     than 500 single-record ones (a journal fsync per message:
//     docs/bind-facts.md, "Measured limits");
//   - ZoneBatcher merges zone ensures into one agent EnsureZones call per
//     pod: the agent serialises zone changes on one control session, so
//     single ensures only queue there, each paying its own round trip.
//
// Either way every caller gets its own outcome: a change or zone refused on
// its own fails alone and its neighbours still apply. Both are bounded
// (batch size, bytes, call timeouts) and hold goroutines only while there
// is work.
package batch
