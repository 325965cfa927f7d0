package idlecache

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestIdleValuesAreClosed(t *testing.T) {
	g := NewWithT(t)
	now := time.Unix(0, 0)
	var closed []string
	c := New(10*time.Minute, func(v string) { closed = append(closed, v) }, func() time.Time { return now })

	c.Put("pod-a", "a1")
	c.Put("pod-b", "b1")
	now = now.Add(6 * time.Minute)
	_, ok := c.Get("pod-a") // a is used, b is not
	g.Expect(ok).To(BeTrue())
	now = now.Add(6 * time.Minute) // b idle 12 min, a 6 min
	_, ok = c.Get("pod-a")
	g.Expect(ok).To(BeTrue())
	g.Expect(closed).To(Equal([]string{"b1"}))
	g.Expect(c.Len()).To(Equal(1))
	_, ok = c.Get("pod-b")
	g.Expect(ok).To(BeFalse(), "an idle value is gone")

	c.Put("pod-a", "a2") // a replacement closes the old value
	g.Expect(closed).To(Equal([]string{"b1", "a1"}))
	v, _ := c.Get("pod-a")
	g.Expect(v).To(Equal("a2"))
}

// A thousand endpoints that each appear once (pod IPs across rolls) leave
// nothing behind once idle.
func TestChurnDoesNotGrow(t *testing.T) {
	now := time.Unix(0, 0)
	closes := 0
	c := New(time.Minute, func(int) { closes++ }, func() time.Time { return now })
	for i := range 1000 {
		c.Put(string(rune('a'+i%26))+time.Duration(i).String(), i)
		now = now.Add(time.Second)
	}
	now = now.Add(2 * time.Minute)
	c.Put("last", 0)
	NewWithT(t).Expect(c.Len()).To(Equal(1))
	NewWithT(t).Expect(closes).To(Equal(1000))
}
