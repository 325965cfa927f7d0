// Package envtestutil is the former name of package testkit, kept only
// until the last packages that import it (test/e2e, hack/demo) move to
// testkit; it holds no code of its own.
//
// Deprecated: use git.unkin.net/unkin/bind-operator/test/testkit.
package envtestutil

import "git.unkin.net/unkin/bind-operator/test/testkit"

// ServiceCIDR is testkit.ServiceCIDR.
const ServiceCIDR = testkit.ServiceCIDR

// Forwarders to testkit.
var (
	RepoRoot              = testkit.RepoRoot
	Scheme                = testkit.Scheme
	NewEnvironment        = testkit.NewEnvironment
	BenchCreateDNSRecords = testkit.BenchCreateDNSRecords
)
