// Package catalogs owns the BindCatalogZone reconciler: it reads a catalog
// zone back from its cluster's primary, reports which member zones it
// lists and which secondaries serve its serial, and raises that serial
// past a secondary that holds a newer one (a primary that lost its data).
// The member records themselves are written by the BindZone reconciler
// (package zones), which owns each member's entry in its catalog.
package catalogs
