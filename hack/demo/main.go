// Command demo starts a real etcd and kube-apiserver with the project's CRDs,
// applies config/samples, shows what was admitted and what is rejected, and
// keeps the API server running until interrupted. It is what `make demo`
// runs until the local cluster with BIND pods exists (see README).
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/envtestutil"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	env, err := envtestutil.NewEnvironment()
	if err != nil {
		return err
	}
	fmt.Println("starting etcd and kube-apiserver with the bind.unkin.net CRDs ...")
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()

	kubeconfig := filepath.Join(envtestutil.RepoRoot(), "bin", "demo.kubeconfig")
	if err := writeKubeconfig(kubeconfig, cfg.Host, cfg.CAData, cfg.CertData, cfg.KeyData); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := envtestutil.RepoRoot()
	samples, _ := filepath.Glob(filepath.Join(root, "config", "samples", "bind_*.yaml"))
	fmt.Printf("\napplying %d sample files from config/samples\n", len(samples))
	for _, f := range samples {
		objs, err := readObjects(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			o.SetNamespace("default")
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("%s: %w", filepath.Base(f), err)
			}
			fmt.Printf("  %s/%s created\n", strings.ToLower(o.GetKind()), o.GetName())
		}
	}
	if err := printBind(ctx, c); err != nil {
		return err
	}

	fmt.Println("\na broken object is rejected at once, with the field and what to do:")
	bad, _ := readObjects(filepath.Join(root, "test", "cel", "testdata", "invalid", "bindzone-forwarders-on-primary.yaml"))
	for _, o := range bad {
		o.SetNamespace("default")
		if err := c.Create(ctx, o); err != nil {
			fmt.Println("  ", err)
		}
	}

	fmt.Printf("\nThe API server runs at %s.\nExplore it: kubectl --kubeconfig %s explain bindzone.spec.records\n", cfg.Host, kubeconfig)
	fmt.Println("Not yet in the demo: BIND pods and dig answers (they need the local cluster of the end-to-end issue).")
	fmt.Println("Press Ctrl-C to stop and clean up.")
	<-ctx.Done()
	fmt.Println("\nstopping ...")
	return os.Remove(kubeconfig)
}

// printBind prints what `kubectl get bind` would list.
func printBind(ctx context.Context, c client.Client) error {
	kinds := []string{"BindCluster", "BindTSIGKey", "BindACL", "BindView", "BindZone", "DNSRecord", "BindCatalogZone", "BindPolicy", "BindDNSSECPolicy"}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nKIND\tNAME\tCREATED")
	for _, k := range kinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: bindv1alpha1.GroupVersion.Group, Version: bindv1alpha1.GroupVersion.Version, Kind: k + "List"})
		if err := c.List(ctx, list, client.InNamespace("default")); err != nil {
			return err
		}
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].GetName() < list.Items[j].GetName() })
		for _, o := range list.Items {
			fmt.Fprintf(w, "%s\t%s\t%s\n", strings.ToLower(k), o.GetName(), o.GetCreationTimestamp().Format("15:04:05"))
		}
	}
	return w.Flush()
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

func writeKubeconfig(path, host string, ca, cert, key []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["demo"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	cfg.AuthInfos["demo"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["demo"] = &clientcmdapi.Context{Cluster: "demo", AuthInfo: "demo", Namespace: "default"}
	cfg.CurrentContext = "demo"
	return clientcmd.WriteToFile(*cfg, path)
}
