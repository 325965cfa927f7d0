// Package controllers holds one reconciler per kind. The BindCluster
// reconciler renders the cluster's configuration (package render), checks it
// with named-checkconf, and only then writes the ConfigMap, the keys Secret
// and the StatefulSet whose pod template carries the config hash.
package controllers
