// Command bind-operator is the project's single binary. Its subcommands:
//
//	bind-operator manager [flags]   run the controllers and admission webhooks
//	bind-operator agent [flags]     run a BIND pod's agent sidecar
//	bind-operator version [-o json] print the release this binary was built as
//	bind-operator import [flags]    write the objects that serve an existing BIND's zones
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "manager":
		err = runManager(os.Args[2:])
	case "agent":
		err = runAgent(os.Args[2:])
	case "import":
		os.Exit(int(runImport(os.Args[2:], os.Stderr)))
	case "version", "--version":
		err = runVersion(os.Args[2:], os.Stdout)
	case "-h", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "unknown subcommand %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bind-operator manager [flags]")
	fmt.Fprintln(os.Stderr, "       bind-operator agent [flags]")
	fmt.Fprintln(os.Stderr, "       bind-operator version [-o text|json]")
	fmt.Fprintln(os.Stderr, "       bind-operator import --namespace NS --cluster NAME --out DIR [--root DIR] [--config FILE] [--validate]")
}
