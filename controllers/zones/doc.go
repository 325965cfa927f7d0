// Package zones owns the BindZone reconciler: it adds each zone to its
// cluster's pods through their agents (addzone, modzone, delzone), writes
// its spec.records and SOA as guarded UPDATEs and compares them with what
// named serves, keeps its entry in a catalog zone, watches its secondaries
// catch up (replication, the controller named bindzone-replication) and
// reports the zone's serials, DNSSEC state and Ready condition. The owned
// record sets it guards on the primary's agent are pushed by package
// dnsrecords (ZoneOwners), which it starts; the clause of one zone is
// rendered from package inputs.
package zones
