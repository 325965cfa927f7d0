package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"git.unkin.net/unkin/bind-operator/internal/version"
)

func TestVersionSubcommand(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	g.Expect(runVersion(nil, &out)).To(Succeed())
	g.Expect(out.String()).To(Equal(version.String() + "\n"))

	out.Reset()
	g.Expect(runVersion([]string{"-o", "json"}, &out)).To(Succeed())
	var got versionInfo
	g.Expect(json.Unmarshal(out.Bytes(), &got)).To(Succeed())
	g.Expect(got).To(Equal(versionInfo{
		Version: version.Version(), Commit: version.Commit(), GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		OperatorImage: version.OperatorImage(), BindImage: version.BindImage(),
	}))

	g.Expect(runVersion([]string{"-o", "yaml"}, &out)).To(MatchError(ContainSubstring("use text or json")))
	g.Expect(runVersion([]string{"extra"}, &out)).To(MatchError(ContainSubstring("unexpected arguments")))
}

// TestManagerAnnouncesItsRelease: one "starting" line with the version
// and commit, and the build-info metric on the given registry.
func TestManagerAnnouncesItsRelease(t *testing.T) {
	g := NewWithT(t)
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	o, _, err := parseManagerFlags(nil)
	g.Expect(err).NotTo(HaveOccurred())
	reg := prometheus.NewPedanticRegistry()
	g.Expect(announce(log, reg, o)).To(Succeed())
	g.Expect(lines).To(HaveLen(1))
	g.Expect(lines[0]).To(And(ContainSubstring(`"msg"="starting"`), ContainSubstring(`"version"="`+version.Version()+`"`),
		ContainSubstring(`"commit"="`+version.Commit()+`"`), ContainSubstring(`"bindImage"="`+version.BindImage()+`"`)))
	mfs, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mfs).To(HaveLen(1))
	g.Expect(mfs[0].GetName()).To(Equal(version.BuildInfoName))
}
