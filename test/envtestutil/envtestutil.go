// Package envtestutil is the former name of package testkit. Nothing in
// the repository imports it any more; it holds no code of its own and is
// kept only until its owner deletes it.
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
