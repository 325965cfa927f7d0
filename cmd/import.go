package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"go.yaml.in/yaml/v2"
	"golang.org/x/sync/errgroup"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"git.unkin.net/unkin/bind-operator/importer"
)

// importFiles are what `import` writes into --out.
const (
	importObjectsFile = "objects.yaml"
	importSecretsFile = "secrets.yaml"
	importSeedsFile   = "seeds.yaml"
)

// runImport is `bind-operator import`: it reads an existing BIND's
// named.conf (and what it includes, its zone files and keys) and writes
// the objects that serve the same zones, or, with --from-manifests, converts
// manifests written for the operator this project descends from
// (docs/migrating.md). The key
// material goes only into secrets.yaml, mode 0600, never to the terminal;
// the zone files of zones too large for one BindZone go into seeds.yaml,
// as ConfigMaps their BindZones load (spec.seedFrom).
// The outcome is the exit status: 0 imported whole, 3 imported with
// omissions (each one on stderr as file:line: what: why), 1 failed
// (nothing written).
func runImport(args []string, stderr io.Writer) importer.Outcome {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts importer.Options
	fs.StringVar(&opts.Root, "root", "/", "the folder the server's paths are resolved in: / on the server itself, or a copy of its files")
	fs.StringVar(&opts.Config, "config", "/etc/bind/named.conf", "named.conf's path, as the server sees it")
	fs.StringVar(&opts.Namespace, "namespace", "", "the namespace of the objects (required, except with --from-manifests: there it fills in objects that name none)")
	fs.StringVar(&opts.Cluster, "cluster", "", "the name of the BindCluster that serves the zones (required, except with --from-manifests)")
	out := fs.String("out", "", "the folder to write "+importObjectsFile+", "+importSecretsFile+" and, for zones too large for one BindZone, "+importSeedsFile+" into (required)")
	var manifests []string
	fromManifests := func(v string) error {
		manifests = append(manifests, v)
		return nil
	}
	fs.Func("from-manifests", "convert the manifests in this file or folder (every .yaml, .yml and .json file under it), written for the operator this project descends from or exported from its cluster with kubectl get -o yaml, instead of reading a named.conf (repeatable)", fromManifests)
	fs.Func("manifests", "the same as --from-manifests (its earlier name)", fromManifests)
	checkconf := fs.String("named-checkconf", "named-checkconf", "named-checkconf, which must accept named.conf before anything is imported (\"\": do not run it)")
	validate := fs.Bool("validate", false, "run every emitted object through the admission rules that need no API server, check that each zone seed loads as its zone, and fail on a refusal")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return importer.Whole
		}
		return importer.Failed
	}
	fail := func(format string, args ...any) importer.Outcome {
		_, _ = fmt.Fprintf(stderr, "import: "+format+"\n", args...)
		return importer.Failed
	}
	switch {
	case fs.NArg() > 0:
		return fail("unexpected arguments %q", fs.Args())
	case *out == "":
		return fail("--out is required")
	case len(manifests) == 0 && (opts.Namespace == "" || opts.Cluster == ""):
		return fail("--namespace and --cluster are required (or --from-manifests)")
	}
	var res *importer.Result
	var err error
	if len(manifests) > 0 {
		res, err = convertManifests(manifests, opts.Namespace)
	} else {
		if err := namedAccepts(*checkconf, opts, stderr); err != nil {
			return fail("%v", err)
		}
		res, err = importer.Import(opts)
	}
	if err != nil {
		return fail("%v", err)
	}
	res.Report.Write(stderr)
	if *validate {
		if errs := importer.Validate(res.Objects); len(errs) > 0 {
			for _, e := range errs {
				_, _ = fmt.Fprintf(stderr, "refused: %v\n", e)
			}
			return fail("%d emitted objects are refused by the admission rules: an importer bug; nothing was written", len(errs))
		}
		if errs := importer.ValidateSeeds(res.Objects, res.Seeds); len(errs) > 0 {
			for _, e := range errs {
				_, _ = fmt.Fprintf(stderr, "refused: %v\n", e)
			}
			return fail("%d zone seeds would not load: an importer bug; nothing was written", len(errs))
		}
	}
	objs, err := yamlDocuments(res.Objects)
	if err != nil {
		return fail("%v", err)
	}
	secrets, err := yamlDocuments(res.Secrets)
	if err != nil {
		return fail("%v", err)
	}
	seeds, err := yamlDocuments(res.Seeds)
	if err != nil {
		return fail("%v", err)
	}
	if err := os.MkdirAll(*out, 0o700); err != nil {
		return fail("%v", err)
	}
	if err := os.WriteFile(filepath.Join(*out, importObjectsFile), objs.Bytes(), 0o644); err != nil {
		return fail("%v", err)
	}
	// WriteFile keeps an existing file's mode: make sure it is 0600.
	sp := filepath.Join(*out, importSecretsFile)
	if err := os.WriteFile(sp, secrets.Bytes(), 0o600); err != nil {
		return fail("%v", err)
	}
	if err := os.Chmod(sp, 0o600); err != nil {
		return fail("%v", err)
	}
	// seeds.yaml only when a zone is seeded; one an earlier import left
	// would seed zones this one does not.
	seedsPath := filepath.Join(*out, importSeedsFile)
	if len(res.Seeds) == 0 {
		if err := os.Remove(seedsPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail("%v", err)
		}
		_, _ = fmt.Fprintf(stderr, "wrote %d objects to %s and %d Secrets to %s (mode 0600): apply the Secrets first\n",
			len(res.Objects), filepath.Join(*out, importObjectsFile), len(res.Secrets), sp)
		return res.Report.Outcome()
	}
	if err := os.WriteFile(seedsPath, seeds.Bytes(), 0o644); err != nil {
		return fail("%v", err)
	}
	_, _ = fmt.Fprintf(stderr, "wrote %d objects to %s, %d Secrets to %s (mode 0600) and %d zone seed ConfigMaps to %s: apply the Secrets and the seeds first, with kubectl apply --server-side\n",
		len(res.Objects), filepath.Join(*out, importObjectsFile), len(res.Secrets), sp, len(res.Seeds), seedsPath)
	return res.Report.Outcome()
}

// namedAccepts runs named-checkconf over the configuration to import: an
// error with named's words when it refuses it. Where it cannot run (not
// installed, or a copy of the files without root), stderr says so and the
// import goes on.
func namedAccepts(checkconf string, opts importer.Options, stderr io.Writer) error {
	if checkconf == "" {
		return nil
	}
	path, err := exec.LookPath(checkconf)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "import: %s not found: the configuration is not checked by named (install bind9-utils, or pass --named-checkconf)\n", checkconf)
		return nil
	}
	err = importer.Checkconf(context.Background(), path, opts)
	if errors.Is(err, importer.ErrNotChecked) {
		_, _ = fmt.Fprintf(stderr, "import: %v\n", err)
		return nil
	}
	return err
}

// convertManifests converts each file, and every manifest file under each
// folder (in name order); objects without a namespace get namespace when
// it is set.
func convertManifests(paths []string, namespace string) (*importer.Result, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					files = append(files, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .yaml, .yml or .json file in %s", strings.Join(paths, ", "))
	}
	all := &importer.Result{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		res, err := importer.ConvertManifests(f, data)
		if err != nil {
			return nil, err
		}
		for _, o := range res.Objects {
			if o.GetNamespace() == "" && namespace != "" {
				o.SetNamespace(namespace)
			}
		}
		all.Objects = append(all.Objects, res.Objects...)
		all.Report.Findings = append(all.Report.Findings, res.Report.Findings...)
	}
	return all, nil
}

// yamlDocuments is objs as YAML documents, in order. The documents are
// encoded on every core: with a million records, encoding is most of an
// import's time.
func yamlDocuments[T any](objs []T) (*bytes.Buffer, error) {
	docs := make([][]byte, len(objs))
	g := new(errgroup.Group)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, o := range objs {
		g.Go(func() error {
			b, err := yamlDocument(o)
			docs[i] = b
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, d := range docs {
		out.WriteString("---\n")
		out.Write(d)
	}
	return &out, nil
}

// yamlDocument is one object as YAML, without the empty status, the empty
// structs and the null creationTimestamp a typed object marshals with. It
// encodes the object's JSON form (keys in order) with the YAML library
// sigs.k8s.io/yaml uses, without the JSON text in between.
func yamlDocument(o any) ([]byte, error) {
	m, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	// The spec's structs that hold nothing (resources: {}, ports: {}):
	// the defaults fill them.
	if spec, ok := m["spec"].(map[string]any); ok {
		for k, v := range spec {
			if sub, ok := v.(map[string]any); ok && len(sub) == 0 {
				delete(spec, k)
			}
		}
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return yaml.Marshal(m)
}
