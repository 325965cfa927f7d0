package render

import (
	"path"
	"slices"
	"strings"
)

// layout lists what must exist in DataDir before named starts.
func (m *model) layout() layout {
	p := m.paths
	dirs := map[string]bool{
		p.DataDir: true, p.zonesDir(): true, p.secondaryDir(): true, p.catalogDir(): true,
		p.catzDir(): true, p.nzdDir(): true, p.DNSSECKeysDir(): true,
	}
	// named creates zone files but not their directories.
	for _, v := range m.scopes() {
		dirs[path.Join(p.zonesDir(), viewDir(v.name))] = true
		dirs[path.Join(p.secondaryDir(), viewDir(v.name))] = true
	}
	var l layout
	for _, c := range m.catalogs {
		l.seeds = append(l.seeds, [2]string{c.seedKey, c.file})
	}
	for _, pol := range m.policies {
		for _, s := range pol.scopes {
			dirs[path.Dir(s.path)] = true
			if len(pol.primaries) == 0 {
				l.everySeeds = append(l.everySeeds, [2]string{s.seedKey, s.path})
			}
		}
	}
	l.dirs = sortedKeys(dirs)
	byPath := func(a, b [2]string) int { return strings.Compare(a[1], b[1]) }
	slices.SortFunc(l.seeds, byPath)
	slices.SortFunc(l.everySeeds, byPath)
	return l
}

// shq quotes s for POSIX sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// renderEntrypoint is the BIND container's command. It is part of the
// ConfigMap (and so of the hash) because it depends on the render: which
// directories and seeds exist.
func renderEntrypoint(p Paths, l layout) string {
	var b strings.Builder
	w := func(s ...string) {
		for _, x := range s {
			b.WriteString(x)
		}
		b.WriteByte('\n')
	}
	w("#!/bin/sh")
	w("# Entrypoint of the named container. Rendered by bind-operator; do not edit.")
	w("#")
	w("# Ordinal 0 of the StatefulSet is the primary, every other ordinal a secondary.")
	w("# BIND_ROLE=primary|secondary overrides the choice (tests, debugging);")
	w("# NAMED_BIN overrides the named binary.")
	w("set -eu")
	w()
	w("config_dir=", shq(p.ConfigDir))
	w()
	w(`role="${BIND_ROLE:-}"`)
	w(`if [ -z "$role" ]; then`)
	w(`	host="${HOSTNAME:-$(hostname)}"`)
	w(`	if [ "${host##*-}" = "0" ]; then role=primary; else role=secondary; fi`)
	w("fi")
	w(`case "$role" in`)
	w("primary | secondary) ;;")
	w(`*) echo "entrypoint: BIND_ROLE must be primary or secondary, not '$role'" >&2; exit 64 ;;`)
	w("esac")
	w()
	w("# named creates zone files, not the directories they live in.")
	for _, d := range l.dirs {
		w("mkdir -p ", shq(d))
	}
	if len(l.seeds)+len(l.everySeeds) > 0 {
		w()
		w("# Seed the primary's config-declared zones only when missing: after the first")
		w("# start the file holds dynamic updates (and its journal) and must never be")
		w("# overwritten.")
		w("seed() {")
		w(`	if [ ! -e "$2" ]; then`)
		w(`		cp "$config_dir/$1" "$2.tmp.$$"`)
		w(`		mv "$2.tmp.$$" "$2"`)
		w("	fi")
		w("}")
	}
	if len(l.seeds) > 0 {
		w(`if [ "$role" = primary ]; then`)
		for _, s := range l.seeds {
			w("	seed ", shq(s[0]), " ", shq(s[1]))
		}
		w("fi")
	}
	if len(l.everySeeds) > 0 {
		w("# Policy zones, on every pod: once seeded, rule edits are the agent's to write.")
		for _, s := range l.everySeeds {
			w("seed ", shq(s[0]), " ", shq(s[1]))
		}
	}
	w()
	w(`exec "${NAMED_BIN:-named}" -g -c "$config_dir/named.conf.$role"`)
	return b.String()
}

func sortUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
