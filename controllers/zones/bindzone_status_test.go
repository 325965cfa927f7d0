package zones

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// A condition message quotes replies from agents and DNS servers; whatever
// they send, the condition stays one printable line of bounded size.
func TestZoneConditionMessageIsBounded(t *testing.T) {
	hostile := map[string]string{
		"long":            strings.Repeat("x", 10*agent.MaxMessageBytes),
		"controls":        "line1\nline2\r\x1b[31mred\x00\x7f\ttab",
		"bidi":            "abc\u202edcba\u2066x\u200b",
		"invalid utf-8":   "ok \xff\xfe\xc3 end",
		"split multibyte": strings.Repeat("a", agent.MaxMessageBytes-1) + "é" + strings.Repeat("b", 10),
		"c1 controls":     "a\u0085b\u009bc",
	}
	for name, msg := range hostile {
		t.Run(name, func(t *testing.T) {
			zone := &bindv1alpha1.BindZone{}
			status := &bindv1alpha1.BindZoneStatus{}
			setZoneCondition(zone, status, metav1.ConditionFalse, bindv1alpha1.ReasonAgentError, "the agent said: "+msg)
			got := status.Conditions[0].Message
			if len(got) > agent.MaxMessageBytes+len("...") {
				t.Errorf("message of %d bytes, want at most %d", len(got), agent.MaxMessageBytes+3)
			}
			if !utf8.ValidString(got) {
				t.Errorf("message is not valid UTF-8: %q", got)
			}
			for _, r := range got {
				if r != ' ' && !unicode.IsPrint(r) {
					t.Fatalf("message holds %U: %q", r, got)
				}
			}
			if !strings.HasPrefix(got, "the agent said: ") {
				t.Errorf("the operator's own words were lost: %q", got)
			}
		})
	}
	if got := agent.Bound("plain message"); got != "plain message" {
		t.Errorf("a clean message changed: %q", got)
	}
}
