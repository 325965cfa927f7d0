package importer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// A zone signed by a dnssec-policy is imported signed by its
// BindDNSSECPolicy and with its keys: the key files named keeps in its
// key-directory go into the zone's keys Secret (DNSSECKeysSecretName), the
// one the operator restores onto the primary before it adds the zone. The
// new cluster then signs with the same keys, and the DS at the parent
// stays valid. The zone file's DNSSEC records are the old signer's: named
// makes them again.

// signedZone reads the zone's dnssec-policy (o) and, when the policy was
// imported, signs z with it and brings its keys.
func (c *converter) signedZone(z *v1.BindZone, zoneStmt, o *Statement) {
	ow := "zone " + string(z.Spec.ZoneName) + ": " + o.Text()
	name := o.Arg(0)
	switch name {
	case "none", "insecure":
		c.res.Report.replace(o.Pos, ow, "a zone without spec.dnssecPolicyRef is not signed")
		return
	case "default":
		c.res.Report.omit(o.Pos, ow, "BIND's built-in default policy is not imported; create a BindDNSSECPolicy with one CSK and name it in spec.dnssecPolicyRef")
		return
	}
	policy, ok := c.dnssecPolicies[name]
	if !ok {
		c.res.Report.omit(o.Pos, ow, "the dnssec-policy %q was not imported (see its own finding), so the zone is imported unsigned", name)
		return
	}
	z.Spec.DNSSECPolicyRef = &v1.LocalObjectReference{Name: policy}
	dir := c.keyDirectory(zoneStmt)
	keys, why := c.zoneKeys(dir, string(z.Spec.ZoneName))
	if why != "" {
		c.res.Report.omit(o.Pos, ow, "signed by BindDNSSECPolicy %s, but its keys are not imported: %s; the cluster makes new keys, and the DS at the parent must change to them", policy, why)
		return
	}
	secret := v1.DNSSECKeysSecretName(z.Name)
	c.res.Secrets = append(c.res.Secrets, &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: c.opts.Namespace, Name: secret, Labels: map[string]string{
			// The operator's own: it keeps the keys current in it after
			// rollovers, and restores it onto a primary that lost them.
			v1.LabelManagedBy: v1.ManagedByValue, v1.LabelCluster: c.opts.Cluster, LabelImportedFrom: c.opts.Cluster,
		}},
		Type: corev1.SecretTypeOpaque,
		Data: validate.SecretData(keys),
	})
	c.res.Report.converted(o.Pos, ow, "signed by BindDNSSECPolicy %s with its %d key files from %s, in Secret %s: the cluster signs with the same keys, so the DS at the parent stays valid", policy, len(keys.Files), dir, secret)
}

// keyDirectory is where named keeps the zone's keys: the zone's
// key-directory, else the options', else its working directory; relative
// paths are relative to the working directory.
func (c *converter) keyDirectory(zoneStmt *Statement) string {
	dir := ""
	for _, sc := range []*Statement{zoneStmt, c.options} {
		if sc == nil {
			continue
		}
		if d := sc.Find("key-directory"); d != nil {
			dir = d.Arg(0)
			break
		}
	}
	if !path.IsAbs(dir) {
		dir = path.Join("/"+c.directory, dir)
	}
	return path.Clean(dir)
}

// zoneKeys reads the key files of zone in dir (as named sees it, under
// the import's root), checked as the operator's agent checks them. why
// says what stops them from being imported.
func (c *converter) zoneKeys(dir, zone string) (agent.ZoneKeys, string) {
	zone = records.CanonicalZone(zone)
	entries, err := os.ReadDir(resolve(c.opts.Root, dir))
	if err != nil {
		return agent.ZoneKeys{}, fmt.Sprintf("its key-directory %s cannot be read (%v)", dir, unwrapPath(err))
	}
	keys := agent.ZoneKeys{Zone: zone}
	for _, e := range entries {
		f, ok := validate.ParseKeyFileName(zone, e.Name())
		if !ok {
			continue
		}
		if !knownAlgorithm(f.Algorithm) {
			return agent.ZoneKeys{}, fmt.Sprintf("key file %s names algorithm %d, which no BindDNSSECPolicy signs with", path.Join(dir, e.Name()), f.Algorithm)
		}
		data, err := readBounded(resolve(c.opts.Root, path.Join(dir, e.Name())), agent.MaxKeyFileBytes)
		if err != nil {
			return agent.ZoneKeys{}, fmt.Sprintf("key file %s cannot be read (%v)", path.Join(dir, e.Name()), unwrapPath(err))
		}
		f.Data = string(data)
		keys.Files = append(keys.Files, f)
	}
	if len(keys.Files) == 0 {
		return keys, fmt.Sprintf("%s holds no key file of it (K%s.+*)", dir, zone)
	}
	keys, err = validate.Keys(keys)
	if err != nil {
		return keys, fmt.Sprintf("the key files in %s are not usable: %v", dir, err)
	}
	return keys, ""
}

// knownAlgorithm: an algorithm a BindDNSSECPolicy can name (dnssecAlgorithms).
func knownAlgorithm(n uint8) bool {
	_, ok := dnssecAlgorithms[strconv.Itoa(int(n))]
	return ok
}

// unwrapPath drops the local path from a file error: the report speaks of
// named's paths.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
