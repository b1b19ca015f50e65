package quorum

import "testing"

func TestOfAndTolerance(t *testing.T) {
	for _, tc := range []struct{ voters, of, tolerance int }{
		{0, 1, 0}, {1, 1, 0}, {2, 2, 0}, {3, 2, 1}, {4, 3, 1}, {5, 3, 2}, {6, 4, 2}, {7, 4, 3}, {9, 5, 4},
	} {
		if got := Of(tc.voters); got != tc.of {
			t.Errorf("Of(%d) = %d, want %d", tc.voters, got, tc.of)
		}
		if got := Tolerance(tc.voters); got != tc.tolerance {
			t.Errorf("Tolerance(%d) = %d, want %d", tc.voters, got, tc.tolerance)
		}
	}
}
