// Command localcluster starts the one-node cluster of test/localcluster
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// kube-proxy, a kubelet with containerd), prints the kubeconfig path and
// runs until Ctrl-C, then removes everything it made. It must run as root.
// See test/localcluster/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"git.unkin.net/unkin/bind-operator/test/localcluster"
)

func main() {
	work := flag.String("work-dir", "", "work folder (default: a new folder under /var/tmp, removed on exit)")
	keep := flag.Bool("keep-work-dir", false, "keep the work folder (component logs) on exit")
	verbose := flag.Bool("v", false, "log the harness' progress")
	flag.Parse()

	opts := localcluster.Options{WorkDir: *work, KeepWorkDir: *keep}
	if *verbose {
		opts.Logf = log.Printf
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		log.Fatalf("localcluster: %v", err)
	}
	fmt.Printf("local cluster is up: node %s, pods %s, services %s\n", localcluster.NodeName, localcluster.PodCIDR, localcluster.ServiceCIDR)
	fmt.Printf("  export KUBECONFIG=%s\n", c.KubeconfigPath())
	fmt.Printf("component logs: %s/logs\n", c.WorkDir())
	fmt.Println("Ctrl-C stops the cluster and removes everything it created.")
	<-ctx.Done()
	fmt.Println("stopping...")
	c.Stop()
}
