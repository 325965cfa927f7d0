// Package agent is the operator's side of the pod agent: the wire types of
// its HTTPS API, a Client for it, and the channel's mutual TLS (tls.go).
//
// The agent (agent/server, started by `bind-operator agent`) runs next to
// named in every BIND pod. It writes seed zone files into the shared data
// volume and drives named's control channel on loopback, so the operator
// never needs pods/exec. The operator reaches it over mutual TLS (tls.go):
// it presents a client certificate from the cluster's agent CA and verifies
// the agent's certificate as ServerName.
//
// API, version 1. Every endpoint is POST with a JSON body (unknown fields
// are refused) and answers JSON:
//
//	POST /v1/zones/ensure        EnsureZoneRequest   → EnsureZoneResult
//	POST /v1/zones/ensure-batch  EnsureZonesRequest  → EnsureZonesResponse
//	POST /v1/zones/delete        ZoneRef             → DeleteZoneResult
//	POST /v1/zones/status        ZoneRef             → ZoneStatus
//	POST /v1/sync                {}                  → SyncResult
//	POST /v1/policies/apply      PolicyRequest       → PolicyResult
//	POST /v1/transfers/probe     TransferProbeRequest → TransferProbeResult
//	POST /v1/zones/owners        OwnersRequest       → OwnersResult
//	POST /v1/zones/owners/list   {}                  → StoredOwners
//	POST /v1/zones/owners/get    ZoneRef             → OwnersRequest (404: none stored)
//
// Errors come back as ErrorResponse with a 4xx (the request is wrong and
// will stay wrong) or 5xx (named or the agent failed; retry) status.
package agent
