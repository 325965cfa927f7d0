package validate

import (
	"bufio"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Keys checks a zone's DNSSEC key files and returns them canonical: the
// zone as ZoneName gives it, the files sorted by algorithm, tag and kind.
//
// The files come from a Secret a tenant can write, or from an agent's
// reply, and the agent writes them into named's key-directory, where named
// signs with whatever it finds for the zone. So every key must be the
// zone's own and whole: a .key file holding one DNSKEY of this zone whose
// algorithm and tag are the file's, a .private file for the same
// algorithm, both present (a public key alone signs nothing; a .state
// file is optional). Contents are printable text of bounded size.
// Refusals name the file, never what it holds: a .private file is a
// private key.
func Keys(req agent.ZoneKeys) (agent.ZoneKeys, error) {
	zone, err := ZoneName(req.Zone)
	if err != nil {
		return req, err
	}
	if len(req.Files) > agent.MaxKeyFiles {
		return req, fail("files", "holds %d files, the limit is %d", len(req.Files), agent.MaxKeyFiles)
	}
	out := agent.ZoneKeys{Zone: zone, Files: slices.Clone(req.Files)}
	slices.SortFunc(out.Files, compareKeyFiles)
	type keyID struct {
		alg uint8
		tag uint16
	}
	kinds := map[keyID][]string{}
	for i, f := range out.Files {
		field := fmt.Sprintf("files[%d]", i)
		name := KeyFileLabel(f)
		if i > 0 && compareKeyFiles(out.Files[i-1], f) == 0 {
			return req, fail(field, "%s appears twice", name)
		}
		if f.Algorithm == 0 {
			return req, fail(field, "%s: algorithm 0 is not a DNSSEC algorithm", name)
		}
		if err := keyFileText(f.Data); err != nil {
			return req, fail(field, "%s: %v", name, err)
		}
		switch f.Kind {
		case agent.KeyFilePublic:
			if err := publicKeyFile(zone, f); err != nil {
				return req, fail(field, "%s: %v", name, err)
			}
		case agent.KeyFilePrivate:
			if err := privateKeyFile(f); err != nil {
				return req, fail(field, "%s: %v", name, err)
			}
		case agent.KeyFileState:
		default:
			return req, fail(field, "kind %q is not one of %q, %q, %q", clip(f.Kind), agent.KeyFilePublic, agent.KeyFilePrivate, agent.KeyFileState)
		}
		id := keyID{f.Algorithm, f.Tag}
		kinds[id] = append(kinds[id], f.Kind)
	}
	for _, f := range out.Files {
		have := kinds[keyID{f.Algorithm, f.Tag}]
		for _, need := range []string{agent.KeyFilePublic, agent.KeyFilePrivate} {
			if !slices.Contains(have, need) {
				return req, fail("files", "key %03d+%05d has no .%s file: a key needs its .key and .private files", f.Algorithm, f.Tag, need)
			}
		}
	}
	return out, nil
}

// KeyFileLabel names a key file in messages and Secret keys without the
// zone: "013+12345.private".
func KeyFileLabel(f agent.KeyFile) string {
	return fmt.Sprintf("%03d+%05d.%s", f.Algorithm, f.Tag, clip(f.Kind))
}

// KeyFileName is the file named keeps f in for zone (canonical):
// K<zone>.+<algorithm>+<tag>.<kind>, as dnssec-keygen names it.
func KeyFileName(zone string, f agent.KeyFile) string {
	return fmt.Sprintf("K%s.+%03d+%05d.%s", zone, f.Algorithm, f.Tag, f.Kind)
}

// ParseKeyFileName reads a file name of zone's keys back: the algorithm,
// tag and kind, or false for any other file. The part after the zone is a
// keys Secret's data key (v1alpha1.DNSSECKeyFileKey) with '+' for its '-'.
func ParseKeyFileName(zone, name string) (agent.KeyFile, bool) {
	rest, ok := strings.CutPrefix(name, "K"+zone+".+")
	if !ok || strings.Contains(rest, "-") {
		return agent.KeyFile{}, false
	}
	alg, tag, kind, ok := v1alpha1.ParseDNSSECKeyFileKey(strings.Replace(rest, "+", "-", 1))
	return agent.KeyFile{Algorithm: alg, Tag: tag, Kind: kind}, ok
}

// SecretData lays a zone's key files out as its keys Secret's data, one
// entry per file under v1alpha1.DNSSECKeyFileKey.
func SecretData(keys agent.ZoneKeys) map[string][]byte {
	out := make(map[string][]byte, len(keys.Files))
	for _, f := range keys.Files {
		out[v1alpha1.DNSSECKeyFileKey(f.Algorithm, f.Tag, f.Kind)] = []byte(f.Data)
	}
	return out
}

// FromSecretData reads a keys Secret's data back as zone's key files,
// checked as Keys checks them.
func FromSecretData(zone string, data map[string][]byte) (agent.ZoneKeys, error) {
	keys := agent.ZoneKeys{Zone: zone}
	for _, k := range slices.Sorted(maps.Keys(data)) {
		alg, tag, kind, ok := v1alpha1.ParseDNSSECKeyFileKey(k)
		if !ok {
			return keys, fail("data", "key %q is not <algorithm>-<tag>.<key|private|state> (013-12345.private)", clip(k))
		}
		keys.Files = append(keys.Files, agent.KeyFile{Algorithm: alg, Tag: tag, Kind: kind, Data: string(data[k])})
	}
	return Keys(keys)
}

func compareKeyFiles(a, b agent.KeyFile) int {
	return cmp.Or(cmp.Compare(a.Algorithm, b.Algorithm), cmp.Compare(a.Tag, b.Tag), cmp.Compare(a.Kind, b.Kind))
}

// keyFileText bounds a file and keeps it to printable ASCII lines.
func keyFileText(data string) error {
	if data == "" {
		return fmt.Errorf("is empty")
	}
	if len(data) > agent.MaxKeyFileBytes {
		return fmt.Errorf("is %d bytes long, the limit is %d", len(data), agent.MaxKeyFileBytes)
	}
	for i := 0; i < len(data); i++ {
		if c := data[i]; (c < ' ' && c != '\n' && c != '\t' && c != '\r') || c >= 0x7f {
			return fmt.Errorf("byte %d is not printable ASCII text", i)
		}
	}
	return nil
}

// publicKeyFile checks that a .key file holds exactly one DNSKEY record,
// of zone, with the file's algorithm and tag.
func publicKeyFile(zone string, f agent.KeyFile) error {
	var key *dns.DNSKEY
	zp := dns.NewZoneParser(strings.NewReader(f.Data), dns.Fqdn(zone), "")
	zp.SetIncludeAllowed(false)
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		k, isKey := rr.(*dns.DNSKEY)
		if !isKey || key != nil {
			return fmt.Errorf("must hold exactly one DNSKEY record")
		}
		key = k
	}
	if err := zp.Err(); err != nil {
		return fmt.Errorf("does not parse as a DNSKEY record")
	}
	switch {
	case key == nil:
		return fmt.Errorf("holds no DNSKEY record")
	case !strings.EqualFold(key.Hdr.Name, dns.Fqdn(zone)):
		return fmt.Errorf("is a key of %s, not of %s", clip(key.Hdr.Name), dns.Fqdn(zone))
	case key.Algorithm != f.Algorithm:
		return fmt.Errorf("holds a key of algorithm %d", key.Algorithm)
	case key.KeyTag() != f.Tag:
		return fmt.Errorf("holds the key with tag %d", key.KeyTag())
	}
	return nil
}

// privateKeyFile checks a .private file's header: its format and
// algorithm lines, which are not secret.
func privateKeyFile(f agent.KeyFile) error {
	sc := bufio.NewScanner(strings.NewReader(f.Data))
	sc.Buffer(make([]byte, 0, 1024), agent.MaxKeyFileBytes)
	var format, alg bool
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		v = strings.TrimSpace(v)
		switch k {
		case "Private-key-format":
			format = strings.HasPrefix(v, "v1.")
		case "Algorithm":
			n, _, _ := strings.Cut(v, " ")
			alg = n == fmt.Sprint(f.Algorithm)
		}
	}
	if !format || !alg {
		return fmt.Errorf("is not a private key file of algorithm %d (Private-key-format v1.x and Algorithm %d lines)", f.Algorithm, f.Algorithm)
	}
	return nil
}
