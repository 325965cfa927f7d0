package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/agent/validate"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/importer"
)

func fixture(name string) string { return filepath.Join("..", "importer", "testdata", name) }

// TestImportSubcommand: the exit status says how the import went, the
// objects and the Secrets go to their two files (the Secrets' mode 0600,
// even over an existing file), and no key material reaches the terminal.
func TestImportSubcommand(t *testing.T) {
	g := NewWithT(t)
	out := t.TempDir()
	// An existing secrets.yaml with a looser mode is tightened.
	g.Expect(os.WriteFile(filepath.Join(out, importSecretsFile), nil, 0o644)).To(Succeed())
	var stderr bytes.Buffer
	code := runImport([]string{"--root", fixture("server"), "--namespace", "dns", "--cluster", "legacy", "--out", out, "--validate"}, &stderr)
	g.Expect(code).To(Equal(importer.WithOmissions), stderr.String())
	g.Expect(stderr.String()).To(ContainSubstring("/etc/bind/named.conf:44: omitted: zone static.example"))
	g.Expect(stderr.String()).To(ContainSubstring("wrote 11 objects"))

	st, err := os.Stat(filepath.Join(out, importSecretsFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	secrets, err := os.ReadFile(filepath.Join(out, importSecretsFile))
	g.Expect(err).NotTo(HaveOccurred())
	objects, err := os.ReadFile(filepath.Join(out, importObjectsFile))
	g.Expect(err).NotTo(HaveOccurred())
	for _, material := range []string{"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXhmcg==", "ZGRucy1rZXktbWF0ZXJpYWwtZGRucy1rZXktbWF0ZXJpYWw="} {
		g.Expect(stderr.String()).NotTo(ContainSubstring(material))
		g.Expect(string(objects)).NotTo(ContainSubstring(material))
	}

	// Every document decodes, without status or empty structs.
	docs := 0
	r := utilyaml.NewYAMLReader(bufioReader(objects))
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		var m map[string]any
		g.Expect(yaml.Unmarshal(doc, &m)).To(Succeed())
		if len(m) == 0 {
			continue
		}
		docs++
		g.Expect(m).NotTo(HaveKey("status"))
		g.Expect(string(doc)).NotTo(ContainSubstring("{}"))
	}
	g.Expect(docs).To(Equal(11))
	g.Expect(filepath.Join(out, importSeedsFile)).NotTo(BeAnExistingFile(), "no zone is seeded")
	g.Expect(strings.Count(string(secrets), "kind: Secret")).To(Equal(2))
}

func TestImportSubcommandExitStatus(t *testing.T) {
	g := NewWithT(t)
	var stderr bytes.Buffer
	g.Expect(runImport([]string{"--root", fixture("resolver"), "--namespace", "dns", "--cluster", "r", "--out", t.TempDir()}, &stderr)).To(Equal(importer.Whole), stderr.String())
	stderr.Reset()
	g.Expect(runImport([]string{"--root", t.TempDir(), "--namespace", "dns", "--cluster", "r", "--out", t.TempDir()}, &stderr)).To(Equal(importer.Failed))
	g.Expect(stderr.String()).To(ContainSubstring("/etc/bind/named.conf: file not found"), "named's words")
	stderr.Reset()
	g.Expect(runImport([]string{"--root", fixture("server")}, &stderr)).To(Equal(importer.Failed))
	g.Expect(stderr.String()).To(ContainSubstring("--out is required"))
	stderr.Reset()
	g.Expect(runImport([]string{"--root", fixture("server"), "--out", t.TempDir()}, &stderr)).To(Equal(importer.Failed))
	g.Expect(stderr.String()).To(ContainSubstring("--namespace and --cluster are required (or --from-manifests)"))
}

// TestImportSubcommandRefusedByNamed: a named.conf named-checkconf
// refuses is not imported: named's words, nothing written, status 1; a
// secret near the fault never reaches the terminal.
func TestImportSubcommandRefusedByNamed(t *testing.T) {
	if _, err := exec.LookPath("named-checkconf"); err != nil {
		t.Fatal("named-checkconf not found: run `make deps` (BIND 9.18 from Debian)")
	}
	g := NewWithT(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "named.conf")
	g.Expect(os.WriteFile(conf, []byte(`options { directory "`+dir+`"; };
key "k" { algorithm hmac-sha256; secret "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I=" "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I="; };
`), 0o644)).To(Succeed())
	var stderr bytes.Buffer
	out := filepath.Join(dir, "out")
	g.Expect(runImport([]string{"--config", conf, "--namespace", "dns", "--cluster", "c", "--out", out}, &stderr)).To(Equal(importer.Failed))
	g.Expect(stderr.String()).To(ContainSubstring("named-checkconf refuses " + conf))
	g.Expect(stderr.String()).To(ContainSubstring(conf+":2: missing ';' before"), "named's own words, with its file:line")
	g.Expect(stderr.String()).NotTo(ContainSubstring("c2VjcmV0"))
	g.Expect(filepath.Join(out, importObjectsFile)).NotTo(BeAnExistingFile())

	// --named-checkconf "" skips it: the importer's own, laxer reading
	// decides.
	stderr.Reset()
	g.Expect(runImport([]string{"--config", conf, "--namespace", "dns", "--cluster", "c", "--out", out, "--named-checkconf", ""}, &stderr)).NotTo(Equal(importer.Failed))
	g.Expect(stderr.String()).NotTo(ContainSubstring("named-checkconf"))
}

// TestImportSubcommandManifests: --from-manifests converts the
// predecessor's manifests, a file or every manifest file under a folder
// (kubectl's exported Lists among them); what it leaves out makes the
// status 3. --manifests is its earlier name.
func TestImportSubcommandManifests(t *testing.T) {
	g := NewWithT(t)
	seed, err := os.ReadFile(fixture("seed/manifests.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(dir, "exported"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "seed.yaml"), seed, 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "exported", "acls.json"), []byte(`{"apiVersion":"v1","kind":"List","items":[
{"apiVersion":"bind.unkin.net/v1alpha1","kind":"BindACL","metadata":{"name":"lab","namespace":"dns","uid":"u"},"spec":{"entries":["192.0.2.0/24"]}}]}`), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a manifest"), 0o644)).To(Succeed())
	for flag, path := range map[string]string{"--from-manifests": dir, "--manifests": fixture("seed/manifests.yaml")} {
		var stderr bytes.Buffer
		out := t.TempDir()
		g.Expect(runImport([]string{flag, path, "--out", out, "--validate"}, &stderr)).To(Equal(importer.WithOmissions), stderr.String())
		g.Expect(stderr.String()).To(ContainSubstring("spec.notify: this API's BindZone has no such field"))
		g.Expect(stderr.String()).To(ContainSubstring(`converted: BindZone static: spec.type: "master" is now "Primary"`))
		objects, err := os.ReadFile(filepath.Join(out, importObjectsFile))
		g.Expect(err).NotTo(HaveOccurred())
		want := 18
		if path == dir {
			want++ // the exported ACL
			g.Expect(stderr.String()).To(ContainSubstring(`acls.json#1: converted: BindACL lab: spec.entries: ["192.0.2.0/24"] is now [{"address":"192.0.2.0/24"}]`))
		}
		g.Expect(strings.Count(string(objects), "\nkind: ")).To(Equal(want))
	}
	var stderr bytes.Buffer
	g.Expect(runImport([]string{"--from-manifests", t.TempDir(), "--out", t.TempDir()}, &stderr)).To(Equal(importer.Failed))
	g.Expect(stderr.String()).To(ContainSubstring("no .yaml, .yml or .json file in"))
}

// TestImportSubcommandSeeds: a zone too large for one BindZone is
// written as ConfigMaps to seeds.yaml (mode 0644), which the status line
// names, and its BindZone names them; an import without one leaves no
// seeds.yaml of an earlier import behind.
func TestImportSubcommandSeeds(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	var db strings.Builder
	db.WriteString("$TTL 60\n@ SOA ns.example.net. h.example.net. 1 1 1 1 1\n@ NS ns.example.net.\n$GENERATE 1-20001 h$ A 192.0.2.1\nh1 HINFO \"PC\" \"Linux\"\n")
	g.Expect(os.WriteFile(filepath.Join(root, "named.conf"), []byte("options { recursion no; };\nzone \"big.example\" { type primary; file \"/db\"; };\n"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(root, "db"), []byte(db.String()), 0o644)).To(Succeed())
	out := t.TempDir()
	run := func() string {
		var stderr bytes.Buffer
		code := runImport([]string{"--root", root, "--config", "/named.conf", "--namespace", "dns", "--cluster", "legacy", "--out", out, "--validate", "--named-checkconf", ""}, &stderr)
		g.Expect(code).To(Equal(importer.Whole), stderr.String())
		return stderr.String()
	}
	stderr := run()
	g.Expect(stderr).To(ContainSubstring("converted: zone big.example: its 20002 record sets"))
	g.Expect(stderr).To(ContainSubstring("and 1 zone seed ConfigMaps to " + filepath.Join(out, importSeedsFile) + ": apply the Secrets and the seeds first"))
	st, err := os.Stat(filepath.Join(out, importSeedsFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o644)))
	seeds, err := os.ReadFile(filepath.Join(out, importSeedsFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(seeds)).To(ContainSubstring("\n  zone: |\n    $ORIGIN big.example.\n"), "the zone file as a YAML block, line by line")
	objects, err := os.ReadFile(filepath.Join(out, importObjectsFile))
	g.Expect(err).NotTo(HaveOccurred())
	var cm corev1.ConfigMap
	g.Expect(yaml.UnmarshalStrict(bytes.TrimPrefix(seeds, []byte("---\n")), &cm)).To(Succeed())
	g.Expect(cm.Name).To(Equal("big.example-seed-0"))
	g.Expect(cm.Annotations).To(HaveKeyWithValue(v1.AnnotationSeedFor, "big.example"))
	g.Expect(cm.Data[v1.SeedDataKey]).To(ContainSubstring("\nh1.big.example. 60 IN HINFO \"PC\" \"Linux\"\n"))
	g.Expect(string(objects)).To(ContainSubstring("    sha256: " + validate.SeedDigest([]byte(cm.Data[v1.SeedDataKey])) + "\n"))
	g.Expect(run()).To(Equal(stderr), "the same report")
	again, err := os.ReadFile(filepath.Join(out, importSeedsFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(seeds), "byte-identical on a second run")

	// Smaller now: no seeds.yaml.
	db.Reset()
	db.WriteString("$TTL 60\n@ SOA ns.example.net. h.example.net. 1 1 1 1 1\n@ NS ns.example.net.\n")
	g.Expect(os.WriteFile(filepath.Join(root, "db"), []byte(db.String()), 0o644)).To(Succeed())
	g.Expect(run()).NotTo(ContainSubstring(importSeedsFile))
	g.Expect(filepath.Join(out, importSeedsFile)).NotTo(BeAnExistingFile())
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
