package importer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// A named.conf that named itself refuses is not imported: what the
// importer would make of it is a guess, and named's words say what to fix
// (issue: "stops the import with named's own words"). named-checkconf
// reads the configuration as named does, includes and keys too, but not
// the zone files (ReadZoneFile reads those and says file:line).

// checkconfTimeout bounds one named-checkconf run.
const checkconfTimeout = 2 * time.Minute

// maxCheckconfOutput bounds what of named-checkconf's output is kept.
const maxCheckconfOutput = 8 << 10

// ErrNotChecked says named-checkconf did not run; the import goes on.
var ErrNotChecked = errors.New("named-checkconf did not run")

// secretLike is a quoted token that may be key material: named quotes the
// token near a syntax error, and in a broken key statement that is the
// secret. It never reaches the terminal.
var secretLike = regexp.MustCompile(`'[A-Za-z0-9+/=]{16,}'`)

// Checkconf runs checkconf (named-checkconf's path) over opts' named.conf
// as the server sees it: with -t (a chroot, which needs root) when Root
// is a copy of the server's files. It returns nil when named accepts the
// configuration, an error with named's words when it refuses it, and
// ErrNotChecked (wrapped, with the reason) when it cannot run here.
func Checkconf(ctx context.Context, checkconf string, opts Options) error {
	root := opts.Root
	if root == "" {
		root = "/"
	}
	args := []string{}
	if filepath.Clean(root) != "/" {
		if os.Geteuid() != 0 {
			return fmt.Errorf("%w: reading a copy of the server's files (--root) takes a chroot, which needs root; run the import as root or on the server", ErrNotChecked)
		}
		abs, err := filepath.Abs(root)
		if err != nil {
			return err
		}
		args = append(args, "-t", abs)
	}
	args = append(args, opts.Config)
	ctx, cancel := context.WithTimeout(ctx, checkconfTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, checkconf, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil {
		return nil
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || ctx.Err() != nil {
		return fmt.Errorf("%w: %v", ErrNotChecked, err)
	}
	words := out.Bytes()
	if len(words) > maxCheckconfOutput {
		words = append(words[:maxCheckconfOutput:maxCheckconfOutput], "…"...)
	}
	return fmt.Errorf("named-checkconf refuses %s; fix it on the server, then import again:\n%s",
		opts.Config, strings.TrimSpace(secretLike.ReplaceAllString(string(words), "'…'")))
}
