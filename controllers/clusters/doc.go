// Package clusters owns the BindCluster reconciler and everything a
// cluster runs: it gathers the cluster's render input (package inputs),
// renders and checks the configuration with named-checkconf, and only then
// writes the ConfigMap, the keys Secret (with each view's key and the
// control key), the agent CA, the Services, the PodDisruptionBudget, the
// NetworkPolicy and the StatefulSet whose pod template carries the config
// hash. ClusterOptions are the operator-wide settings it takes from cmd.
// The names of those objects are in package clusterpods, which the other
// reconcilers use to find the pods.
package clusters
