package names

import "testing"

func TestMemberIndex(t *testing.T) {
	for _, tc := range []struct {
		cluster, member string
		index           int
		ok              bool
	}{
		{"demo", "demo-0", 0, true},
		{"demo", "demo-12", 12, true},
		{"demo", "demo-01", 0, false},
		{"demo", "demo-", 0, false},
		{"demo", "demo-x", 0, false},
		{"demo", "other-1", 0, false},
		{"demo", "demo-peer-1", 0, false},
		{"a-b", "a-b-3", 3, true},
		{"a", "a-b-3", 0, false},
	} {
		i, ok := MemberIndex(tc.cluster, tc.member)
		if ok != tc.ok || (ok && i != tc.index) {
			t.Errorf("MemberIndex(%q, %q) = %d, %v; want %d, %v", tc.cluster, tc.member, i, ok, tc.index, tc.ok)
		}
	}
}

func TestPeerURLRoundTrip(t *testing.T) {
	for _, tls := range []bool{true, false} {
		u := PeerURL("demo", "ns1", "demo-3", tls)
		m, ok := MemberFromPeerURL("demo", "ns1", u)
		if !ok || m != "demo-3" {
			t.Fatalf("MemberFromPeerURL(%q) = %q, %v", u, m, ok)
		}
	}
	for _, u := range []string{
		"https://demo-3.demo-peer.other.svc:2380",
		"https://demo-3.x-peer.ns1.svc:2380",
		"https://10.0.0.1:2380",
		"https://demo-peer.ns1.svc:2380",
	} {
		if m, ok := MemberFromPeerURL("demo", "ns1", u); ok {
			t.Errorf("MemberFromPeerURL(%q) accepted a foreign URL as %q", u, m)
		}
	}
	if got := PeerURL("demo", "ns1", "demo-0", true); got != "https://demo-0.demo-peer.ns1.svc:2380" {
		t.Errorf("PeerURL = %q", got)
	}
}

func TestIDRoundTrip(t *testing.T) {
	for _, id := range []uint64{1, 0x8e9e05c52164694d, ^uint64(0)} {
		back, err := ParseID(FormatID(id))
		if err != nil || back != id {
			t.Errorf("ParseID(FormatID(%d)) = %d, %v", id, back, err)
		}
	}
}
