package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"

	"git.unkin.net/unkin/bind-operator/internal/version"
)

// versionInfo is `version -o json`: what a script needs to tell a release
// and the images it defaults to.
type versionInfo struct {
	Version       string `json:"version"`
	Commit        string `json:"commit"`
	GoVersion     string `json:"goVersion"`
	Platform      string `json:"platform"`
	OperatorImage string `json:"operatorImage"`
	BindImage     string `json:"bindImage"`
}

// runVersion prints the release: one line (version.String) or, with
// -o json, versionInfo.
func runVersion(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	format := fs.String("o", "text", "output format: text or json")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version: unexpected arguments %q", fs.Args())
	}
	switch *format {
	case "text":
		_, err := fmt.Fprintln(out, version.String())
		return err
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(versionInfo{
			Version:       version.Version(),
			Commit:        version.Commit(),
			GoVersion:     runtime.Version(),
			Platform:      runtime.GOOS + "/" + runtime.GOARCH,
			OperatorImage: version.OperatorImage(),
			BindImage:     version.BindImage(),
		})
	default:
		return fmt.Errorf("version: -o %q: use text or json", *format)
	}
}
