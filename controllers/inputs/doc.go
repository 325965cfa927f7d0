// Package inputs gathers what a cluster's configuration is rendered from
// (render.Input): its zones, views, ACLs, keys with their material,
// DNSSEC policies, catalogs and the clusters it forwards to, for the
// whole cluster (GatherInput, the BindCluster reconciler) or for one
// zone's clause (GatherZoneInput, the BindZone reconciler). Objects the
// current admission rules refuse are left out, with everything that names
// them (recheck_inputs.go); RenderRefused tells a failure the user must
// fix from one to retry. It reads and writes nothing else.
package inputs
