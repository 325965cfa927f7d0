// Command localcluster starts the Docker-free local cluster of
// test/localcluster (etcd, kube-apiserver, kube-controller-manager, a node
// agent that runs pods as processes, a ClusterIP proxy), prints the
// kubeconfig path and runs until Ctrl-C, then removes everything it made.
// It must run as root. See test/localcluster/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"git.unkin.net/unkin/bind-operator/test/localcluster"
)

func main() {
	root := localcluster.RepoRoot()
	defOp := filepath.Join(root, "bin", "bind-operator")
	if _, err := os.Stat(defOp); err != nil {
		defOp = ""
	}
	defCRDs := filepath.Join(root, "config", "crd", "bases")
	if _, err := os.Stat(defCRDs); err != nil {
		defCRDs = ""
	}
	op := flag.String("operator-binary", defOp, "binary the operator image runs (empty: that image is unmapped)")
	crds := flag.String("crds", defCRDs, "folder of CRD manifests to install (empty: none)")
	work := flag.String("work-dir", "", "work folder (default: a new temporary folder, removed on exit)")
	keep := flag.Bool("keep-work-dir", false, "keep the work folder (logs) on exit")
	verbose := flag.Bool("v", false, "log the harness' progress")
	flag.Parse()

	opts := localcluster.Options{OperatorBinary: *op, WorkDir: *work, KeepWorkDir: *keep}
	if *crds != "" {
		opts.CRDDirectoryPaths = []string{*crds}
	}
	if *verbose {
		opts.Logf = log.Printf
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		log.Fatalf("localcluster: %v", err)
	}
	fmt.Printf("local cluster is up (node %s, pods %s, services %s)\n", c.NodeName(), localcluster.PodCIDR, localcluster.ServiceCIDR)
	fmt.Printf("kubeconfig: %s\n", c.KubeconfigPath())
	fmt.Printf("  export KUBECONFIG=%s\n", c.KubeconfigPath())
	fmt.Printf("container logs: %s/logs/<namespace>/<pod>/<container>.log\n", c.WorkDir())
	fmt.Println("Ctrl-C stops the cluster and removes everything it created.")
	<-ctx.Done()
	fmt.Println("stopping...")
	c.Stop()
	if left := localcluster.Leftovers(); len(left) > 0 {
		log.Fatalf("localcluster: left behind: %v", left)
	}
}
