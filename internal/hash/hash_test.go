package hash

import "testing"

func TestOf(t *testing.T) {
	type spec struct {
		Image  string
		Labels map[string]string
	}
	a := spec{Image: "etcd:3.6", Labels: map[string]string{"x": "1", "y": "2"}}
	b := spec{Image: "etcd:3.6", Labels: map[string]string{"y": "2", "x": "1"}}
	c := spec{Image: "etcd:3.5", Labels: map[string]string{"x": "1", "y": "2"}}
	for _, tc := range []struct {
		name  string
		x, y  any
		equal bool
	}{
		{"map order does not matter", a, b, true},
		{"a changed field changes the hash", a, c, false},
		{"nil and empty map differ", spec{}, spec{Labels: map[string]string{}}, false},
	} {
		if got := Of(tc.x) == Of(tc.y); got != tc.equal {
			t.Errorf("%s: equal = %v, want %v", tc.name, got, tc.equal)
		}
	}
	if len(Of(a)) != 16 {
		t.Errorf("hash length = %d, want 16", len(Of(a)))
	}
}
