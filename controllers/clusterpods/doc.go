// Package clusterpods is how the reconcilers reach a BindCluster's BIND:
// the names of the objects a cluster owns and its DNS ports, its pods'
// addresses (PodEndpoints) and cached agent clients, the DNS server and
// key of a zone (ZoneServer, ClusterResolver), the TSIG material of keys
// and views and who may read it, and the questions asked of named (the
// serials and values it serves, SOA edits, NOTIFY, catalog members). It
// changes no Kubernetes object and imports no other package of
// controllers/.
package clusterpods
