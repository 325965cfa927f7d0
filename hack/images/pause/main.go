// Command pause is the sandbox ("pause") container of the local cluster's
// pods (test/localcluster): it holds the pod's namespaces open, reaps the
// zombies of processes that share its PID namespace, and exits on SIGINT or
// SIGTERM. The upstream image cannot be pulled here (no registry), so the
// harness builds this one (hack/build-images.sh).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
