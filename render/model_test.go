package render

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// byName orders by name, and only items of one name by their tie, in
// whatever order they come.
func TestByName(t *testing.T) {
	type item struct{ name, tie string }
	want := []item{{"a", "x"}, {"b", "a"}, {"b", "m"}, {"b", "z"}, {"c", "a"}, {"d", "b"}, {"d", "c"}}
	key := func(i *item) (string, string) { return i.name, i.tie }
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		in := slices.Clone(want)
		r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		var got []item
		for _, p := range byName(in, key) {
			got = append(got, *p)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("byName(%v) = %v, want %v", in, got, want)
		}
	}
}
