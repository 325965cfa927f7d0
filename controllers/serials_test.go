package controllers

import "testing"

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
		if got := serialNewer(tc.a, tc.b); got != tc.want {
			t.Errorf("serialNewer(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.want)
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
		got, ahead := newestSerial(tc.primary, tc.secondaries)
		if got != tc.want || ahead != tc.wantAhead {
			t.Errorf("%s: got (%d, %v), want (%d, %v)", tc.name, got, ahead, tc.want, tc.wantAhead)
		}
	}
}
