package zones

import (
	"maps"
	"testing"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusterpods"
)

func TestSerialNewer(t *testing.T) {
	for _, tc := range []struct {
		a, b uint32
		want bool
	}{
		{2, 1, true},
		{1, 2, false},
		{7, 7, false},
		{1, 0xFFFFFFFF, true},  // wrapped past the top
		{0xFFFFFFFF, 1, false}, // behind across the wrap
		{1_800_000_000, 1, true},
		{1, 1_800_000_000, false},
	} {
		if got := clusterpods.SerialNewer(tc.a, tc.b); got != tc.want {
			t.Errorf("SerialNewer(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNewestSerial(t *testing.T) {
	for _, tc := range []struct {
		name        string
		primary     uint32
		secondaries []uint32
		want        uint32
		wantAhead   bool
	}{
		{"in sync", 5, []uint32{5, 5}, 5, false},
		{"behind is normal", 5, []uint32{4}, 5, false},
		{"none answered", 5, nil, 5, false},
		{"re-seeded primary", 1, []uint32{1_800_000_010, 1_800_000_012, 3}, 1_800_000_012, true},
		{"across the wrap", 0xFFFFFFF0, []uint32{2}, 2, true},
	} {
		got, ahead := clusterpods.NewestSerial(tc.primary, tc.secondaries)
		if got != tc.want || ahead != tc.wantAhead {
			t.Errorf("%s: got (%d, %v), want (%d, %v)", tc.name, got, ahead, tc.want, tc.wantAhead)
		}
	}
}

func TestStuckSecondaries(t *testing.T) {
	serial := func(s int64) *int64 { return &s }
	before := lookOf(10, []bindv1alpha1.SecondaryZoneStatus{
		{Pod: "behind-unmoved", Serial: serial(9)},
		{Pod: "behind-moved", Serial: serial(8)},
		{Pod: "in-sync", Serial: serial(10)},
		{Pod: "was-in-sync", Serial: serial(10)},
		{Pod: "silent-twice"},
		{Pod: "silent-now", Serial: serial(9)},
	})
	now := lookOf(11, []bindv1alpha1.SecondaryZoneStatus{
		{Pod: "behind-unmoved", Serial: serial(9)},
		{Pod: "behind-moved", Serial: serial(9)},
		{Pod: "in-sync", Serial: serial(11)},
		// In sync at the previous look; the primary has changed since
		// and its NOTIFY is on its way: not stuck yet.
		{Pod: "was-in-sync", Serial: serial(10)},
		{Pod: "silent-twice"},
		{Pod: "silent-now"},
		{Pod: "new-behind", Serial: serial(8)},
		// Not in the previous look at all (scaled up, starting).
		{Pod: "new-silent"},
	})
	got := stuckSecondaries(before, now)
	want := map[string]bool{"behind-unmoved": true, "silent-twice": true}
	if !maps.Equal(got, want) {
		t.Errorf("stuckSecondaries = %v, want %v", got, want)
	}
	// The first look has nothing to compare with: nobody is stuck yet.
	if got := stuckSecondaries(nil, now); len(got) != 0 {
		t.Errorf("first look: stuckSecondaries = %v, want none", got)
	}
}
