// Package render turns a BindCluster and the objects that belong to it into
// BIND configuration: the two named.conf variants (primary and secondary),
// the keys Secret, the pod entrypoint and static zone files.
//
// Everything here is a pure function of its Input. The controller hashes the
// result (ConfigHash) onto the pod template, so two renders of the same
// objects must produce the same bytes no matter in which order the API server
// listed them, and nothing that changes when a pod restarts, a pod IP above
// all, may ever reach the output (docs/behaviours.md, "Deterministic render"
// and "No pod IP in restart-scoped config").
package render

import (
	"fmt"
	"path"
	"runtime"
	"sort"
	"sync"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Paths are where files live inside a BIND pod.
type Paths struct {
	ConfigDir string // ConfigMap mount (read-only): named.conf variants, entrypoint, static zone files
	KeysDir   string // Secret mount (read-only): keys.conf, control key
	DataDir   string // writable data volume shared by named and the agent: zone files, journals, nzd, DNSSEC keys, catz
}

// DefaultPaths are the mount points the BindCluster controller uses.
func DefaultPaths() Paths {
	return Paths{
		ConfigDir: "/etc/bind-operator/config",
		KeysDir:   "/etc/bind-operator/keys",
		DataDir:   "/var/lib/bind",
	}
}

// TSIGKey is the material of one TSIG key. Secret is the base64 material;
// Name is the key's name in BIND (BindTSIGKey spec.keyName).
type TSIGKey struct{ Name, Algorithm, Secret string }

// Input is everything a cluster's configuration depends on. Slices may come
// in any order: Render sorts them.
type Input struct {
	Cluster *bindv1alpha1.BindCluster
	// PrimaryAddress is the stable transfer address of the primary: the
	// primary Service ClusterIP, never a pod IP.
	PrimaryAddress string
	// PrimaryPort is the primary Service's DNS port. Zero means the
	// cluster's spec.ports.dns (53 when unset).
	PrimaryPort int32
	// ControlKey signs the rndc control channel the agent uses on 127.0.0.1.
	ControlKey TSIGKey
	// Keys holds the material of BindTSIGKeys by object name (references
	// in the CRs use object names).
	Keys map[string]TSIGKey
	// ViewKeys holds the material of each BindView's key, by view name; its
	// Name must be bindv1alpha1.ViewKeyName(view). The operator generates
	// these (they belong to no BindTSIGKey), and a view without its key is
	// a render error.
	ViewKeys       map[string]TSIGKey
	ACLs           []bindv1alpha1.BindACL
	Views          []bindv1alpha1.BindView
	Zones          []bindv1alpha1.BindZone // all zones of the cluster; render decides which live in config
	Catalogs       []bindv1alpha1.BindCatalogZone
	DNSSECPolicies []bindv1alpha1.BindDNSSECPolicy
	Policies       []bindv1alpha1.BindPolicy // RPZ
	// Forwardees are the BindClusters that forwarders name (clusterRef),
	// by object name. A name missing here is a render error.
	Forwardees map[string]Forwardee
	Paths      Paths
}

// Result is the rendered configuration.
type Result struct {
	// ConfigData becomes the ConfigMap: "named.conf.primary",
	// "named.conf.secondary", "entrypoint.sh" and static zone files.
	ConfigData map[string]string
	// SecretData becomes the keys Secret: "keys.conf" (all TSIG keys) and
	// "control.conf" (the rndc control key).
	SecretData map[string][]byte
	// SeedData joins ConfigData in the ConfigMap but not the config hash:
	// the policy zones' current rules, which a new pod starts from and a
	// running one gets through its agent, so a rule edit rolls nothing.
	SeedData map[string]string
}

// Keys of Result.ConfigData and Result.SecretData.
const (
	FilePrimaryConf   = "named.conf.primary"
	FileSecondaryConf = "named.conf.secondary"
	FileEntrypoint    = "entrypoint.sh"
	FileKeys          = "keys.conf"
	FileControl       = "control.conf"
)

// Fixed loopback endpoints inside the pod. They are not configurable on
// purpose: the agent is the only client and shares the pod's loopback.
const (
	ControlPort    = 953
	StatisticsPort = 8053
)

// Render renders the configuration of in.Cluster. Its errors are sentences
// a user can act on.
func Render(in Input) (Result, error) {
	r, _, err := render(in)
	return r, err
}

// layout is what the entrypoint (and Check) must prepare in DataDir before
// named starts: directories, and seed files copied from ConfigDir when
// missing.
type layout struct {
	dirs       []string    // absolute, sorted
	seeds      [][2]string // primary only: {ConfigMap key, absolute DataDir path}, sorted by path
	everySeeds [][2]string // every pod (policy zones), the same way
}

func render(in Input) (Result, layout, error) {
	if in.Cluster == nil {
		return Result{}, layout{}, fmt.Errorf("render: no BindCluster given")
	}
	if in.Paths == (Paths{}) {
		in.Paths = DefaultPaths()
	}
	m, err := newModel(in)
	if err != nil {
		return Result{}, layout{}, fmt.Errorf("BindCluster %s: %w", in.Cluster.Name, err)
	}
	res := Result{ConfigData: map[string]string{}, SecretData: map[string][]byte{}, SeedData: map[string]string{}}
	// Once the config zones are rendered, the files only read the model:
	// keys.conf and each named.conf variant are written side by side.
	m.renderConfigZones()
	parallel := runtime.GOMAXPROCS(0) > 1
	var keysConf, controlConf string
	var keysErr, controlErr error
	confs := make([]string, 2)
	confErrs := make([]error, 2)
	var wg sync.WaitGroup
	run := func(f func()) {
		if parallel {
			wg.Go(f)
		} else {
			f()
		}
	}
	run(func() {
		keysConf, keysErr = renderKeys(m)
		controlConf, controlErr = renderControlKey(m)
	})
	for i, role := range []role{rolePrimary, roleSecondary} {
		run(func() { confs[i], confErrs[i] = renderNamedConf(m, role) })
	}
	wg.Wait()
	// The errors in the order the files were once written in turn.
	for _, err := range append([]error{keysErr, controlErr}, confErrs...) {
		if err != nil {
			return Result{}, layout{}, fmt.Errorf("BindCluster %s: %w", in.Cluster.Name, err)
		}
	}
	res.SecretData[FileKeys] = []byte(keysConf)
	res.SecretData[FileControl] = []byte(controlConf)
	for i, role := range []role{rolePrimary, roleSecondary} {
		res.ConfigData[confFile(role)] = confs[i]
	}
	for _, p := range m.policies {
		if len(p.primaries) > 0 {
			continue // a feed: transferred, not seeded
		}
		for _, sc := range p.scopes {
			res.SeedData[sc.seedKey] = p.file
		}
	}
	for _, c := range m.catalogs {
		res.ConfigData[c.seedKey] = catalogSeed(c.name)
	}
	lay := m.layout()
	res.ConfigData[FileEntrypoint] = renderEntrypoint(m.paths, lay)
	return res, lay, nil
}

func confFile(r role) string {
	if r == rolePrimary {
		return FilePrimaryConf
	}
	return FileSecondaryConf
}

// role is the part a pod plays: ordinal 0 is the primary.
type role int

const (
	rolePrimary role = iota
	roleSecondary
)

// defaultView names the directory of zones that live outside any view.
// View names are Kubernetes object names and cannot start with "_".
const defaultView = "_default"

// Directory layout of DataDir. The agent writes runtime zone files with
// PrimaryZoneFile / SecondaryZoneFile so that both sides agree.
func (p Paths) zonesDir() string     { return path.Join(p.DataDir, "zones") }
func (p Paths) secondaryDir() string { return path.Join(p.DataDir, "secondary") }
func (p Paths) catalogDir() string   { return path.Join(p.DataDir, "catalog") }
func (p Paths) catzDir() string      { return path.Join(p.DataDir, "catz") }
func (p Paths) nzdDir() string       { return path.Join(p.DataDir, "nzd") }

// DNSSECKeysDir is named's key-directory: the keys dnssec-policy makes.
func (p Paths) DNSSECKeysDir() string  { return path.Join(p.DataDir, "keys") }
func (p Paths) pidFile() string        { return path.Join(p.DataDir, "named.pid") }
func (p Paths) sessionKeyFile() string { return path.Join(p.DataDir, "session.key") }

// OwnersSocketName is the Unix socket, in the data directory, on which the
// agent judges the UPDATEs a zone's update-policy defers to it (the
// "external" rule of zones with an update key): named connects to it per
// record. The rule names it relative to named's working directory, which
// is the data directory (options { directory }): BIND reads the rule's
// "local:<path>" as a DNS name, so a component of an absolute path longer
// than 63 bytes (a test's temporary directory) would not parse.
const OwnersSocketName = "owners.sock"

// OwnersSocket is the absolute path of OwnersSocketName, where the agent
// listens.
func (p Paths) OwnersSocket() string { return path.Join(p.DataDir, OwnersSocketName) }

// PrimaryZoneFile is where the agent writes the seed of a runtime primary
// zone (rndc addzone) before adding it. view is "" outside views.
func (p Paths) PrimaryZoneFile(view, zone string) string {
	return path.Join(p.zonesDir(), viewDir(view), zoneStem(zone)+".db")
}

// PolicyZoneFile is the file of a BindPolicy's response policy zone in a
// view ("" outside views): seeded from the ConfigMap when missing, then
// rewritten by the agent whenever the rules change (no roll).
func (p Paths) PolicyZoneFile(view, zone string) string {
	return path.Join(p.policyDir(), viewDir(view), zoneStem(zone)+".db")
}

func (p Paths) policyDir() string { return path.Join(p.DataDir, "rpz") }

// SecondaryZoneFile is the file of a secondary copy of a zone (runtime
// secondaries and config-declared Secondary/Stub zones). view is "" outside
// views.
func (p Paths) SecondaryZoneFile(view, zone string) string {
	return path.Join(p.secondaryDir(), viewDir(view), zoneStem(zone)+".db")
}

func viewDir(view string) string {
	if view == "" {
		return defaultView
	}
	return view
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
