package clusterpods

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestViewKeysAreGeneratedOnceAndKept(t *testing.T) {
	g := NewWithT(t)
	views := []bindv1alpha1.BindView{{ObjectMeta: metav1.ObjectMeta{Name: "inside"}}, {ObjectMeta: metav1.ObjectMeta{Name: "outside"}}}

	// Reading without generating leaves a missing key out.
	none, err := ViewKeys(nil, views, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(none).To(BeEmpty())

	first, err := ViewKeys(nil, views, true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first).To(HaveLen(2))
	g.Expect(first["inside"].Name).To(Equal("bind-operator-view-inside"))
	g.Expect(first["inside"].Secret).NotTo(Equal(first["outside"].Secret))

	data := map[string][]byte{"control.secret": []byte("x"), ViewKeyEntry("gone"): []byte("old")}
	KeepViewKeys(data, first)
	g.Expect(data).To(HaveKeyWithValue("view-inside.secret", []byte(first["inside"].Secret)))

	// The next reconcile keeps the material it stored.
	again, err := ViewKeys(data, views, true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(first))
}
