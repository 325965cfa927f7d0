// Package dnsrecords owns DNSRecords and who owns a record set: the
// DNSRecord reconciler writes one record set per DNSRecord with
// prerequisite-guarded UPDATEs; DeletedRecords keeps a deleted record's
// tombstone until its data has left the zone (DNSRecords carry no
// finalizer); admissions decide which records a zone admits; and
// ZoneOwners (the controller named bindzone-owners) tells each primary's
// agent which record sets the operator owns, so that a client holding the
// zone's update key cannot overwrite them, and sweeps the sets of records
// deleted while no operator ran. The BindZone reconciler (package zones)
// shares the tombstones and starts ZoneOwners.
package dnsrecords
