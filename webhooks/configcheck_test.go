package webhooks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// namedCheckconf is the real binary; `make test` installs it.
func namedCheckconf(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("named-checkconf")
	if err != nil {
		t.Fatalf("named-checkconf is not installed (make deps): %v", err)
	}
	return p
}

func checkedCluster(mut func(*v1alpha1.BindClusterSpec)) *v1alpha1.BindCluster {
	c := &v1alpha1.BindCluster{ObjectMeta: objectMeta("dns")}
	if mut != nil {
		mut(&c.Spec)
	}
	c.SetDefaults()
	return c
}

// TestAllowedExtraOptionsPassNamedCheckconf: every statement on the
// allowlist is real BIND 9.18 grammar — all examples at once pass the
// admission check on an Authoritative and a Resolver cluster.
func TestAllowedExtraOptionsPassNamedCheckconf(t *testing.T) {
	k := NewConfigChecker(namedCheckconf(t), 30*time.Second)
	var all []string
	for _, n := range allowedNames {
		all = append(all, v1alpha1.AllowedExtraOptions[n].Example)
	}
	for _, mode := range []v1alpha1.ClusterMode{v1alpha1.ModeAuthoritative, v1alpha1.ModeResolver} {
		var warns admission.Warnings
		c := checkedCluster(func(s *v1alpha1.BindClusterSpec) { s.Mode = mode; s.ExtraOptions = all })
		if errs := k.Check(context.Background(), c, &warns); len(errs) > 0 || len(warns) > 0 {
			t.Fatalf("%s: %v %v", mode, errs, warns)
		}
	}
}

// TestConfigCheckRejects: a statement on the allowlist whose arguments BIND
// refuses is an error at its own item, in named's words.
func TestConfigCheckRejects(t *testing.T) {
	k := NewConfigChecker(namedCheckconf(t), 30*time.Second)
	p := field.NewPath("spec", "extraOptions")
	for _, tc := range []struct {
		opts  []string
		index int
		named string // what named-checkconf says, after the file and line
	}{
		{[]string{`max-cache-size lots;`}, 0, "expected integer and optional unit or percent near 'lots'"},
		{[]string{`minimal-responses yes;`, `rate-limit { frobnicate 1; };`}, 1, "unknown option 'frobnicate'"},
		{[]string{`version none;`, `tcp-clients 20;`, `minimal-responses maybe;`}, 2, "boolean expected near 'maybe'"},
		{[]string{`check-names primary explode;`}, 0, "'explode' unexpected"},
		{[]string{`transfer-format lots-of-answers;`}, 0, "'lots-of-answers' unexpected"},
	} {
		t.Run(tc.opts[tc.index], func(t *testing.T) {
			var warns admission.Warnings
			errs := k.Check(context.Background(), checkedCluster(func(s *v1alpha1.BindClusterSpec) { s.ExtraOptions = tc.opts }), &warns)
			g := NewWithT(t)
			g.Expect(warns).To(BeEmpty())
			g.Expect(errs).To(HaveLen(1))
			e := errs[0]
			g.Expect(e.Type).To(Equal(field.ErrorTypeInvalid))
			g.Expect(e.Field).To(Equal(p.Index(tc.index).String()))
			g.Expect(e.BadValue).To(Equal(tc.opts[tc.index]))
			g.Expect(e.Detail).To(MatchRegexp(`^BIND refuses this configuration; named-checkconf says "/etc/bind-operator/config/named\.conf\.primary:\d+: ` + regexpQuote(tc.named) + `"\. Fix or remove the statement it names$`))
		})
	}
}

func regexpQuote(s string) string {
	r := strings.NewReplacer(`.`, `\.`, `(`, `\(`, `)`, `\)`, `[`, `\[`, `]`, `\]`, `*`, `\*`, `+`, `\+`, `?`, `\?`, `|`, `\|`, `^`, `\^`, `$`, `\$`)
	return r.Replace(s)
}

// TestConfigCheckStubsReferences: a cluster that references ACLs and keys
// that are not given to the check is checked with stubs, not refused.
func TestConfigCheckStubsReferences(t *testing.T) {
	k := NewConfigChecker(namedCheckconf(t), 30*time.Second)
	c := checkedCluster(func(s *v1alpha1.BindClusterSpec) {
		s.Mode = v1alpha1.ModeResolver
		s.TransferKeyRef = &v1alpha1.LocalObjectReference{Name: "xfr"}
		s.AllowQuery = []v1alpha1.AddressMatchElement{{ACLRef: "internal"}, {KeyRef: "client"}, {Address: "192.0.2.0/24"}}
		s.Recursion = &v1alpha1.RecursionSpec{AllowRecursion: []v1alpha1.AddressMatchElement{{ACLRef: "internal"}}}
		s.ExtraOptions = []string{`minimal-responses yes;`}
	})
	var warns admission.Warnings
	if errs := k.Check(context.Background(), c, &warns); len(errs) > 0 || len(warns) > 0 {
		t.Fatalf("%v %v", errs, warns)
	}
}

// TestConfigCheckBounded: a check that does not finish in time, or cannot
// run, admits with a warning (the controller checks again before a roll);
// an update that leaves the rendered fields alone is not checked at all.
func TestConfigCheckBounded(t *testing.T) {
	slow := filepath.Join(t.TempDir(), "slow-checkconf")
	NewWithT(t).Expect(os.WriteFile(slow, []byte("#!/bin/sh\nexec sleep 5\n"), 0o755)).To(Succeed())
	ctx := context.Background()
	c := checkedCluster(func(s *v1alpha1.BindClusterSpec) { s.ExtraOptions = []string{`minimal-responses yes;`} })

	var warns admission.Warnings
	start := time.Now()
	errs := NewConfigChecker(slow, 200*time.Millisecond).Check(ctx, c, &warns)
	if len(errs) > 0 || len(warns) != 1 || !strings.Contains(warns[0], "did not finish within 200ms") || time.Since(start) > 3*time.Second {
		t.Fatalf("slow check: errs %v warns %v after %s", errs, warns, time.Since(start))
	}

	w := &BindClusterWebhook{Checker: NewConfigChecker(slow, 200*time.Millisecond)}
	updated := c.DeepCopy()
	updated.Spec.Replicas = ptr.To[int32](5)
	updated.Spec.Image = "example.org/bind:9.18"
	got, err := w.ValidateUpdate(ctx, c, updated)
	if err != nil || len(got) != 0 {
		t.Fatalf("an update of replicas and image ran the check: %v %v", got, err)
	}
	updated.Spec.ExtraOptions = append(updated.Spec.ExtraOptions, `version none;`)
	if got, err = w.ValidateUpdate(ctx, c, updated); err != nil || !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "named-checkconf") }) {
		t.Fatalf("an update of extraOptions did not run the check: %v %v", got, err)
	}

	warns = nil
	if errs := NewConfigChecker(filepath.Join(t.TempDir(), "missing"), time.Second).Check(ctx, c, &warns); len(errs) > 0 || len(warns) != 1 {
		t.Fatalf("missing binary: %v %v", errs, warns)
	}
}

func TestRenderChanged(t *testing.T) {
	c := checkedCluster(nil)
	for _, tc := range []struct {
		desc string
		mut  func(*v1alpha1.BindClusterSpec)
		want bool
	}{
		{"replicas", func(s *v1alpha1.BindClusterSpec) { s.Replicas = ptr.To[int32](7) }, false},
		{"node selector", func(s *v1alpha1.BindClusterSpec) { s.NodeSelector = map[string]string{"a": "b"} }, false},
		{"pod annotations", func(s *v1alpha1.BindClusterSpec) { s.PodAnnotations = map[string]string{"a": "b"} }, false},
		{"extra options", func(s *v1alpha1.BindClusterSpec) { s.ExtraOptions = []string{"version none;"} }, true},
		{"query log", func(s *v1alpha1.BindClusterSpec) { s.QueryLog = true }, true},
		{"mode", func(s *v1alpha1.BindClusterSpec) { s.Mode = v1alpha1.ModeResolver }, true},
		{"dns port", func(s *v1alpha1.BindClusterSpec) { s.Ports.DNS = 5353 }, true},
		{"tuning", func(s *v1alpha1.BindClusterSpec) { s.Tuning.NotifyRate = ptr.To[int32](5) }, true},
	} {
		n := c.DeepCopy()
		tc.mut(&n.Spec)
		if got := RenderChanged(c, n); got != tc.want {
			t.Errorf("%s: RenderChanged = %v, want %v", tc.desc, got, tc.want)
		}
	}
	if !RenderChanged(nil, c) {
		t.Error("a create is always checked")
	}
}

func TestExtraOptionsDefaultToOneLine(t *testing.T) {
	c := &v1alpha1.BindCluster{ObjectMeta: objectMeta("dns"), Spec: v1alpha1.BindClusterSpec{ExtraOptions: []string{"rate-limit {\n  responses-per-second 10;\r\n  window 5;\n};\n"}}}
	NewWithT(t).Expect((&BindClusterWebhook{}).Default(context.Background(), c)).To(Succeed())
	NewWithT(t).Expect(c.Spec.ExtraOptions).To(Equal([]string{"rate-limit {   responses-per-second 10;   window 5; };"}))
}

// BenchmarkConfigCheck is the cost the named-checkconf run adds to a
// BindCluster admission whose rendered fields changed.
func BenchmarkConfigCheck(b *testing.B) {
	bin, err := exec.LookPath("named-checkconf")
	if err != nil {
		b.Skip("named-checkconf is not installed")
	}
	k := NewConfigChecker(bin, 30*time.Second)
	c := checkedCluster(func(s *v1alpha1.BindClusterSpec) {
		s.ExtraOptions = []string{`minimal-responses yes;`, `max-cache-size 256m;`, `rate-limit { responses-per-second 10; };`}
	})
	for b.Loop() {
		var warns admission.Warnings
		if errs := k.Check(context.Background(), c, &warns); len(errs)+len(warns) > 0 {
			b.Fatal(errs, warns)
		}
	}
}
