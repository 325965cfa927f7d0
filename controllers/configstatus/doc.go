// Package configstatus owns the status of the objects a cluster's
// configuration is rendered from without a reconciler of their own:
// BindViews, BindACLs, BindDNSSECPolicies and BindPolicies. It reports
// whether each is used and is in the running configuration of every
// cluster that names it, and brings a BindPolicy's rules to the agents
// (bindpolicy_rules.go). It writes nothing but those statuses and the
// policies' rules.
package configstatus
