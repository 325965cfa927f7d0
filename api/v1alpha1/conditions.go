package v1alpha1

// Condition types. Each kind reports at least Ready; kinds with more to say
// add their own types beside it. Reasons are part of the API too: users
// and tools match on them, so they are named here, per kind, and never
// change meaning.
const (
	// ConditionReady is True when the object has been fully applied to BIND.
	ConditionReady = "Ready"
	// ConditionConfigValid is True when the last rendered configuration was
	// accepted by named-checkconf.
	ConditionConfigValid = "ConfigValid"
	// ConditionProgressing is True while a change is being rolled out.
	ConditionProgressing = "Progressing"
	// ConditionConflict is True when another object already owns the data
	// this object wants to manage.
	ConditionConflict = "Conflict"
)

// Reason of the Ready condition of every kind.
const (
	// ReasonInvalid: the object fails the operator's current admission
	// rules, which tightened after it was stored (an upgrade, a narrower
	// flag). The operator re-checks every stored object when it starts
	// and whenever one changes. An Invalid object is left out of every
	// configuration and nothing it declares is applied or removed: what
	// already runs stays as it is until its spec is fixed. The message
	// names each field at fault with the validating webhook's sentence
	// (docs/behaviours.md, "Stored objects are re-checked").
	ReasonInvalid = "Invalid"
)

// Reasons of a BindCluster's ConfigValid, Progressing and Ready conditions.
const (
	// ReasonRenderFailed: the configuration cannot be rendered yet (usually
	// something it references does not exist); the pods keep the last one.
	ReasonRenderFailed = "RenderFailed"
	// ReasonCheckFailed: named-checkconf rejected the rendered configuration;
	// the pods keep the last accepted one.
	ReasonCheckFailed = "ConfigRejected"
	// ReasonConfigValid: named-checkconf accepted the rendered configuration.
	ReasonConfigValid = "Checked"
	// ReasonRollingOut: some pods do not run the current configuration yet.
	ReasonRollingOut = "RollingOut"
	// ReasonUpToDate: every pod runs the current configuration.
	ReasonUpToDate = "UpToDate"
	// ReasonAllReady: every pod is ready.
	ReasonAllReady = "AllReplicasReady"
	// ReasonNotReady: some pods are not ready.
	ReasonNotReady = "ReplicasNotReady"
	// ReasonNameConflict: an object with a name the cluster needs (a
	// Service, ConfigMap, Secret, StatefulSet, PodDisruptionBudget or
	// NetworkPolicy) exists and is not controlled by the cluster. The
	// operator never modifies it; the message names it.
	ReasonNameConflict = "NameConflict"
	// ReasonImageNotAllowed: spec.image or spec.agentImage pins an image
	// outside the operator's allowed prefixes (--allowed-images), which
	// were narrowed, or whose default repositories moved with an operator
	// upgrade, after the cluster was admitted. The operator keeps the
	// StatefulSet as it is, so the pods run what they ran and no change
	// rolls (nor is a first StatefulSet created); the message names the
	// field, the image and the allowed prefixes.
	ReasonImageNotAllowed = "ImageNotAllowed"
)

// Reasons of a BindTSIGKey's Ready condition.
const (
	// ReasonKeyGenerated: the operator generated the key material into its
	// Secret.
	ReasonKeyGenerated = "Generated"
	// ReasonKeyImported: the key uses an existing Secret, never modified.
	ReasonKeyImported = "Imported"
	// ReasonSecretMissing: the Secret to import does not exist.
	ReasonSecretMissing = "SecretNotFound"
	// ReasonSecretConflict: a Secret of that name exists but was not
	// created for this key.
	ReasonSecretConflict = "SecretNotManaged"
	// ReasonSecretUnusable: the Secret holds no usable key material.
	ReasonSecretUnusable = "SecretUnusable"
)

// Reasons of a BindZone's Ready condition.
const (
	// ReasonServed: the primary and every secondary serve the zone.
	ReasonServed = "Served"
	// ReasonInConfig: a secondary, stub or forward zone, declared in
	// named.conf by its BindCluster.
	ReasonInConfig = "InConfig"
	// ReasonClusterNotFound: spec.clusterRef names no BindCluster.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonInvalidZone: the zone, or something it references, cannot be
	// applied as declared.
	ReasonInvalidZone = "InvalidZone"
	// ReasonPrimaryNotReady: the primary cannot be reached yet.
	ReasonPrimaryNotReady = "PrimaryNotReady"
	// ReasonAgentError: a pod's agent failed; retried.
	ReasonAgentError = "AgentError"
	// ReasonRecordsRefused: the primary refused some of spec.records (or
	// the catalog membership); the others are served.
	ReasonRecordsRefused = "RecordsRefused"
	// ReasonReplicating: the primary serves the zone; some secondaries do
	// not serve its serial yet.
	ReasonReplicating = "Replicating"
	// ReasonExternalSecondaryFailing: a server of spec.externalSecondaries
	// does not serve the zone (it refuses, does not answer, or has not
	// transferred it); the cluster serves it.
	ReasonExternalSecondaryFailing = "ExternalSecondaryFailing"
	// ReasonTransferred: a Secondary zone is served by every pod, each
	// having transferred it from spec.primaries.
	ReasonTransferred = "Transferred"
	// ReasonNotTransferred: some pods of a Secondary zone do not serve it:
	// their transfer from spec.primaries has not succeeded yet.
	ReasonNotTransferred = "NotTransferred"
	// ReasonDNSSECKeysUnusable: the zone's keys Secret holds files that
	// are not the zone's keys, and the primary has none of its own: the
	// zone is not added, since named would sign it with new keys that the
	// parent's DS does not match. The message names the file at fault.
	ReasonDNSSECKeysUnusable = "DNSSECKeysUnusable"
	// ReasonSeedUnusable: the zone file of spec.seedFrom cannot be loaded
	// (a ConfigMap missing or not annotated for the zone, a digest that
	// differs, a file that is not the zone's): the zone is not added to a
	// primary that lacks it. The message names the ConfigMap or line.
	ReasonSeedUnusable = "SeedUnusable"
)

// ConditionDNSSECKeysStored is a signed BindZone's second condition: True
// once its key files are copied into its keys Secret
// (status.dnssec.keysSecret) as named holds them now. Until then a lost
// primary volume would lose the keys.
const ConditionDNSSECKeysStored = "DNSSECKeysStored"

// Reasons of a BindZone's DNSSECKeysStored condition.
const (
	// ReasonKeysStored: the Secret holds the keys named signs with.
	ReasonKeysStored = "KeysStored"
	// ReasonNoKeysYet: named has not made the zone's keys yet.
	ReasonNoKeysYet = "NoKeysYet"
	// ReasonKeysNotStored: the copy failed (the Secret's name is taken
	// by a Secret the operator did not create, or the agent or the API
	// server failed); retried.
	ReasonKeysNotStored = "KeysNotStored"
)

// Reasons of a DNSRecord's Ready and Conflict conditions.
const (
	// ReasonApplied: the zone's primary serves the record set.
	ReasonApplied = "Applied"
	// ReasonZoneNotFound: spec.zoneRef names no BindZone.
	ReasonZoneNotFound = "ZoneNotFound"
	// ReasonZoneNotReady: updates cannot reach the zone's primary yet.
	ReasonZoneNotReady = "ZoneNotReady"
	// ReasonNotAdmitted: the zone is in another namespace and its
	// spec.allowedRecords does not admit the record.
	ReasonNotAdmitted = "NotAdmitted"
	// ReasonClaimed: an older DNSRecord or the BindZone's spec.records
	// manages this name and type.
	ReasonClaimed = "ClaimedByAnother"
	// ReasonForeignData: the zone already holds data for this name and
	// type that no DNSRecord created.
	ReasonForeignData = "ForeignData"
	// ReasonUpdateRefused: the primary refused the UPDATE.
	ReasonUpdateRefused = "UpdateRefused"
	// ReasonInvalidRecord: the record set does not canonicalise in its zone.
	ReasonInvalidRecord = "InvalidRecord"
	// ReasonNoConflict: no other object claims this name and type.
	ReasonNoConflict = "NoConflict"
)

// Reasons of a BindCatalogZone's Ready condition.
const (
	// ReasonCatalogServed: the primary serves the catalog.
	ReasonCatalogServed = "Served"
	// ReasonCatalogNotServed: the catalog cannot be transferred from the
	// primary.
	ReasonCatalogNotServed = "NotServed"
)

// Reasons of the Ready condition of BindView, BindACL, BindPolicy and
// BindDNSSECPolicy: configuration that clusters use.
const (
	// ReasonInRunningConfig: every cluster that uses the object runs a
	// configuration that holds it.
	ReasonInRunningConfig = "InRunningConfig"
	// ReasonClusterNotUpToDate: a cluster that uses the object has not
	// rolled out a configuration that holds it (rendering, checking or
	// rolling; its BindCluster's conditions say which).
	ReasonClusterNotUpToDate = "ClusterNotUpToDate"
	// ReasonUnused: nothing uses the object; it is valid and waits.
	ReasonUnused = "Unused"
	// ReasonPolicyNotLoaded: some pods do not serve the policy zone.
	ReasonPolicyNotLoaded = "NotLoaded"
	// ReasonPolicyLoaded: every pod serves the policy zone.
	ReasonPolicyLoaded = "Loaded"
)
