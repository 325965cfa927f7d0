package localcluster

import (
	"fmt"
	"sort"
	"strings"
)

// Image says what a container image runs on this host: its ENTRYPOINT and
// CMD as local programs. Like a container runtime, a container's command
// replaces Entrypoint and its args replace Cmd (Cmd is dropped when only
// the command is given).
type Image struct {
	Entrypoint []string
	Cmd        []string
}

// Image references the operator's defaults name (controllers.DefaultBindImage
// and controllers.DefaultAgentImage).
const (
	BindImage     = "docker.io/internetsystemsconsortium/bind9"
	OperatorImage = "git.unkin.net/unkin/bind-operator"
)

// DefaultImages is the image table:
//
//	docker.io/internetsystemsconsortium/bind9[:tag] → named (Debian's /usr/sbin/named), CMD -g -c /etc/bind/named.conf;
//	                                                   the operator's pods give `/bin/sh <entrypoint.sh>` as command,
//	                                                   which runs on the host's /bin/sh with the host's named, rndc, dig.
//	git.unkin.net/unkin/bind-operator[:tag]         → operatorBinary (the freshly built bind-operator), CMD manager;
//	                                                   the agent containers give only args (`agent ...`).
//
// Keys are repositories without tag or digest, normalised like a container
// runtime does (docker.io/ and library/ added). Any image not in the table
// leaves its pod Pending with reason ImageNotMapped.
func DefaultImages(operatorBinary, namedPath string) map[string]Image {
	if namedPath == "" {
		namedPath = "/usr/sbin/named"
	}
	t := map[string]Image{
		BindImage: {Entrypoint: []string{namedPath}, Cmd: []string{"-g", "-c", "/etc/bind/named.conf"}},
	}
	if operatorBinary != "" {
		t[OperatorImage] = Image{Entrypoint: []string{operatorBinary}, Cmd: []string{"manager"}}
	}
	return t
}

// normaliseImage strips tag and digest and adds the default registry.
func normaliseImage(ref string) string {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	first, _, hasSlash := strings.Cut(ref, "/")
	switch {
	case !hasSlash:
		ref = "docker.io/library/" + ref
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		ref = "docker.io/" + ref
	}
	return ref
}

// lookupImage finds an image: an exact reference first, then its repository.
func lookupImage(table map[string]Image, ref string) (Image, error) {
	if img, ok := table[ref]; ok {
		return img, nil
	}
	if img, ok := table[normaliseImage(ref)]; ok {
		return img, nil
	}
	known := make([]string, 0, len(table))
	for k := range table {
		known = append(known, k)
	}
	sort.Strings(known)
	return Image{}, fmt.Errorf("%w: %q (known: %s; the operator image needs Options.OperatorBinary)", errUnmappedImage, ref, strings.Join(known, ", "))
}

// containerArgv applies the runtime's command/args rules.
func containerArgv(img Image, command, args []string) []string {
	entry, cmd := img.Entrypoint, img.Cmd
	if len(command) > 0 {
		entry, cmd = command, nil
	}
	if len(args) > 0 {
		cmd = args
	}
	return append(append([]string(nil), entry...), cmd...)
}

// expandVars replaces $(VAR) with the container's environment like the
// kubelet; $$ escapes, unknown references stay as written.
func expandVars(s string, env map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
