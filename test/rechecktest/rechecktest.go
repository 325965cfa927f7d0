// Package rechecktest holds what the reconcilers' unit tests share to
// check that each one reports an object the current admission rules
// refuse (docs/behaviours.md, "Stored objects are re-checked"): a stand-in
// for the webhooks' rules, which the controllers do not import, and the
// Ready condition and event every reconciler must leave.
package rechecktest

import (
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// RefusedLabel marks the objects LabelRules refuses.
const RefusedLabel = "test.bind.unkin.net/refused"

// LabelRules refuses an object labelled RefusedLabel, at the path the
// label's value names, and counts its calls in calls unless it is nil.
func LabelRules(calls *int) func(client.Object) field.ErrorList {
	return func(o client.Object) field.ErrorList {
		if calls != nil {
			*calls++
		}
		if p, ok := o.GetLabels()[RefusedLabel]; ok {
			return field.ErrorList{field.Invalid(field.NewPath("spec", p), "x", "is not allowed any more; write y")}
		}
		return nil
	}
}

// Refused labels o so that LabelRules refuses it at spec.<path>.
func Refused[T client.Object](o T, path string) T {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[RefusedLabel] = path
	o.SetLabels(labels)
	return o
}

// Scheme knows the operator's kinds, Secrets, Services, Pods and
// StatefulSets.
func Scheme(t *testing.T) *runtime.Scheme {
	scheme := runtime.NewScheme()
	gomega.NewWithT(t).Expect(bindv1alpha1.AddToScheme(scheme)).To(gomega.Succeed())
	gomega.NewWithT(t).Expect(corev1.AddToScheme(scheme)).To(gomega.Succeed())
	gomega.NewWithT(t).Expect(appsv1.AddToScheme(scheme)).To(gomega.Succeed())
	return scheme
}

// ReadyOf is the Ready condition of conds, nil when there is none.
func ReadyOf(conds []metav1.Condition) *metav1.Condition {
	return meta.FindStatusCondition(conds, bindv1alpha1.ConditionReady)
}

// ExpectInvalid expects Ready=False (Invalid) with the error LabelRules
// gave for spec.records, and the warning event that reported it.
func ExpectInvalid(g gomega.Gomega, conds []metav1.Condition, rec *events.FakeRecorder) {
	ready := ReadyOf(conds)
	g.Expect(ready).NotTo(gomega.BeNil())
	g.Expect(ready.Status).To(gomega.Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(gomega.Equal(bindv1alpha1.ReasonInvalid))
	g.Expect(ready.Message).To(gomega.HaveSuffix(`spec.records: Invalid value: "x": is not allowed any more; write y`))
	g.Expect(rec.Events).To(gomega.Receive(gomega.And(gomega.ContainSubstring("Warning Invalid"), gomega.ContainSubstring("is not allowed any more"))))
}
