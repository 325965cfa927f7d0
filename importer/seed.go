package importer

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"

	"github.com/miekg/dns"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent/validate"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// A primary zone larger than one BindZone holds (v1.MaxZoneRecordSets
// sets, or maxZoneObjectBytes of spec) is imported by seed: its zone file,
// written anew, goes into ConfigMaps (Result.Seeds, seeds.yaml) that the
// BindZone names in spec.seedFrom, and spec.records stays empty. The
// primary loads the file when it does not have the zone; the operator
// then owns only spec.records and the zone's DNSRecords, and leaves the
// rest of the file alone.
//
// The file is the zone as the DNS library read it, so that it is the same
// bytes on every run: $ORIGIN and $TTL, the SOA, then every record in the
// file's order, one per line in the library's presentation format with
// absolute names ($INCLUDE and $GENERATE expanded). Every type is kept
// (named serves any); what the import leaves out of a zone anyway (names
// outside it, the old signer's records) is left out of the file too.

// maxSeedParts is how many ConfigMaps spec.seedFrom may name.
const maxSeedParts = v1.MaxSeedBytes / v1.MaxSeedPartBytes

// seedZone imports z by seed: soa and kept (the file's records inside the
// zone, without the signer's) as a zone file in ConfigMaps. sets and size
// are what spec.records would have held, for the report. It is false
// when the zone cannot be imported that way either (reported).
func (c *converter) seedZone(z *v1.BindZone, o *Statement, soa *dns.SOA, kept []PosRR, sets, size int) bool {
	origin := string(z.Spec.ZoneName)
	what := "zone " + origin
	var file bytes.Buffer
	_, _ = fmt.Fprintf(&file, "$ORIGIN %s\n$TTL %d\n", dns.Fqdn(origin), soa.Hdr.Ttl)
	writeSeedLine(&file, soa)
	records := 1
	seen := map[string]bool{}
	for _, r := range kept {
		if r.RR.Header().Rrtype == dns.TypeSOA {
			// The apex's is the one above; ReadZoneFile keeps no other
			// there, so this one lies below it.
			c.res.Report.omit(r.Pos, fmt.Sprintf("%s SOA", dns.CanonicalName(r.RR.Header().Name)), "an SOA below the apex: a zone file holds one SOA, at the apex")
			continue
		}
		line := seedLine(r.RR)
		if seen[line] {
			continue // named loads a duplicate record once
		}
		seen[line] = true
		file.WriteString(line)
		file.WriteByte('\n')
		records++
		if file.Len() > v1.MaxSeedBytes {
			break // too large: reported below
		}
	}
	tooLarge := func(detail string) bool {
		c.res.Report.omit(o.Pos, what, "its %d record sets (%d bytes) are more than one BindZone holds (%d sets, %d bytes), and its zone file %s, more than a seed holds (%d ConfigMaps of %d bytes): the zone is not imported; split it into zones, or keep it on a server of its own", sets, size, v1.MaxZoneRecordSets, maxZoneObjectBytes, detail, maxSeedParts, v1.MaxSeedPartBytes)
		return false
	}
	if file.Len() > v1.MaxSeedBytes {
		return tooLarge(fmt.Sprintf("is over %d bytes", v1.MaxSeedBytes))
	}
	parts := seedParts(file.Bytes(), v1.MaxSeedPartBytes)
	if len(parts) > maxSeedParts {
		return tooLarge(fmt.Sprintf("(%d bytes) takes %d parts", file.Len(), len(parts)))
	}
	// The check the agent makes before it writes the file: a refusal here
	// is the importer's bug, reported rather than left for the primary.
	if st, err := validate.Seed(origin, bytes.NewReader(file.Bytes())); err != nil || st.Records != records {
		if err == nil {
			err = fmt.Errorf("it reads back %d records of the %d written", st.Records, records)
		}
		c.res.Report.omit(o.Pos, what, "its zone file, written for its seed, is refused: %v: the zone is not imported (an importer bug: report it)", err)
		return false
	}
	z.Spec.Records = nil
	z.Spec.SeedFrom = &v1.ZoneSeed{SHA256: validate.SeedDigest(file.Bytes())}
	for i, p := range parts {
		name := v1.SeedConfigMapName(z.Name, i)
		z.Spec.SeedFrom.ConfigMaps = append(z.Spec.SeedFrom.ConfigMaps, v1.LocalObjectReference{Name: name})
		c.res.Seeds = append(c.res.Seeds, &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{
				Namespace:   c.opts.Namespace,
				Name:        name,
				Labels:      map[string]string{LabelImportedFrom: c.opts.Cluster},
				Annotations: map[string]string{v1.AnnotationSeedFor: z.Name},
			},
			Immutable: ptr.To(true),
			Data:      map[string]string{v1.SeedDataKey: string(p)},
		})
	}
	in := "ConfigMap " + z.Spec.SeedFrom.ConfigMaps[0].Name
	if n := len(parts); n > 1 {
		in = fmt.Sprintf("%d ConfigMaps %s to %s", n, z.Spec.SeedFrom.ConfigMaps[0].Name, z.Spec.SeedFrom.ConfigMaps[n-1].Name)
	}
	c.res.Report.converted(o.Pos, what, "its %d record sets (%d bytes) are more than one BindZone holds (%d sets, %d bytes): imported by seed, its %d records as a zone file in %s (seeds.yaml), which the primary loads; spec.records is empty, and the operator leaves the file's records alone (move a set into spec.records or a DNSRecord to manage it)", sets, size, v1.MaxZoneRecordSets, maxZoneObjectBytes, records, in)
	return true
}

// seedLine is one record of a seed: the DNS library's presentation format
// with spaces between the fields of the header (its tabs would make the
// YAML of the ConfigMap one double-quoted string, a YAML block scalar
// cannot hold them), nothing at the end of the line.
func seedLine(rr dns.RR) string {
	return strings.TrimRight(strings.ReplaceAll(rr.Header().String(), "\t", " ")+seedRdata(rr), " ")
}

// seedRdata is rr's data as named reads it back. A type the library does
// not know, and NULL (whose presentation is raw bytes), are written in the
// generic form of RFC 3597 (\# length hex), which named reads for any type.
func seedRdata(rr dns.RR) string {
	switch rr := rr.(type) {
	case *dns.RFC3597:
		return fmt.Sprintf("\\# %d %s", len(rr.Rdata)/2, rr.Rdata)
	case *dns.NULL:
		return fmt.Sprintf("\\# %d %X", len(rr.Data), rr.Data)
	}
	return Presentation(rr)
}

func writeSeedLine(b *bytes.Buffer, rr dns.RR) {
	b.WriteString(seedLine(rr))
	b.WriteByte('\n')
}

// seedParts cuts a zone file into parts of at most max bytes, each ending
// at the end of a line. A line longer than max (a record's text is at
// most a few hundred KiB) would make more parts than any seed holds.
func seedParts(file []byte, max int) [][]byte {
	var parts [][]byte
	for len(file) > 0 {
		if len(file) <= max {
			return append(parts, file)
		}
		cut := bytes.LastIndexByte(file[:max], '\n') + 1
		if cut == 0 {
			return make([][]byte, maxSeedParts+1)
		}
		parts = append(parts, file[:cut])
		file = file[cut:]
	}
	return parts
}

// ValidateSeeds checks the seeds of the emitted zones as the operator and
// its agent will read them: each ConfigMap a zone's spec.seedFrom names is
// among seeds, in the zone's namespace, annotated for the zone, with a
// part no larger than a ConfigMap may hold; the parts joined have the
// zone's digest and load as the zone (validate.Seed); and no ConfigMap is
// left over. One error per fault; an import that emits one is a bug of
// the importer.
func ValidateSeeds(objs []client.Object, seeds []*corev1.ConfigMap) []error {
	byKey := map[client.ObjectKey]*corev1.ConfigMap{}
	var out []error
	for _, cm := range seeds {
		byKey[client.ObjectKeyFromObject(cm)] = cm
		for _, msg := range validation.NameIsDNSSubdomain(cm.Name, false) {
			out = append(out, fmt.Errorf("ConfigMap %s: metadata.name: %s", cm.Name, msg))
		}
	}
	used := map[client.ObjectKey]bool{}
	var zones []*v1.BindZone
	for _, o := range objs {
		if z, ok := o.(*v1.BindZone); ok && z.Spec.SeedFrom != nil {
			zones = append(zones, z)
			for _, ref := range z.Spec.SeedFrom.ConfigMaps {
				used[client.ObjectKey{Namespace: z.Namespace, Name: ref.Name}] = true
			}
		}
	}
	for _, cm := range seeds {
		if !used[client.ObjectKeyFromObject(cm)] {
			out = append(out, fmt.Errorf("ConfigMap %s: no zone's spec.seedFrom names it", cm.Name))
		}
	}
	// A seed is parsed whole: the zones on every core.
	found := make([]error, len(zones))
	g := new(errgroup.Group)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, z := range zones {
		g.Go(func() error {
			found[i] = validateSeed(z, byKey)
			return nil
		})
	}
	_ = g.Wait()
	for _, err := range found {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// validateSeed is ValidateSeeds of one zone.
func validateSeed(z *v1.BindZone, byKey map[client.ObjectKey]*corev1.ConfigMap) error {
	s := z.Spec.SeedFrom
	fail := func(format string, args ...any) error {
		return fmt.Errorf("BindZone %s: spec.seedFrom: %s", z.Name, fmt.Sprintf(format, args...))
	}
	if z.Spec.Type != v1.ZonePrimary {
		return fail("the zone is %s; only a Primary zone is seeded", z.Spec.Type)
	}
	if n := len(s.ConfigMaps); n == 0 || n > maxSeedParts {
		return fail("names %d ConfigMaps; 1 to %d", n, maxSeedParts)
	}
	if err := validate.SHA256Hex(s.SHA256); err != nil {
		return fail("%v", err)
	}
	var file bytes.Buffer
	for i, ref := range s.ConfigMaps {
		cm := byKey[client.ObjectKey{Namespace: z.Namespace, Name: ref.Name}]
		switch {
		case cm == nil:
			return fail("configMaps[%d]: ConfigMap %s is not among the seeds", i, ref.Name)
		case cm.Annotations[v1.AnnotationSeedFor] != z.Name:
			return fail("configMaps[%d]: ConfigMap %s has %s %q, not the zone's name", i, ref.Name, v1.AnnotationSeedFor, cm.Annotations[v1.AnnotationSeedFor])
		case len(cm.Data[v1.SeedDataKey]) > v1.MaxSeedPartBytes:
			return fail("configMaps[%d]: ConfigMap %s holds %d bytes under %q, more than the %d of a part", i, ref.Name, len(cm.Data[v1.SeedDataKey]), v1.SeedDataKey, v1.MaxSeedPartBytes)
		}
		file.WriteString(cm.Data[v1.SeedDataKey])
	}
	if d := validate.SeedDigest(file.Bytes()); d != s.SHA256 {
		return fail("sha256 is %s, and the ConfigMaps' zone file has %s", s.SHA256, d)
	}
	if _, err := validate.Seed(string(z.Spec.ZoneName), &file); err != nil {
		return fail("%v", err)
	}
	return nil
}
