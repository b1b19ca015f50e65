package resources

import "testing"

func TestImagePolicy(t *testing.T) {
	mirror := ImagePolicy{AllowedRegistries: []string{"registry.example.com", "ghcr.io/quorate-dev/"}}
	digest := "@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name   string
		policy ImagePolicy
		image  string
		ok     bool
	}{
		{"no policy", ImagePolicy{}, "etcd:3.6", true},
		{"an allowed registry", mirror, "registry.example.com/etcd:v3.6.16", true},
		{"an allowed repository path", mirror, "ghcr.io/quorate-dev/etcd:v3.6.16", true},
		{"another repository of an allowed host", mirror, "ghcr.io/other/etcd:v3.6.16", false},
		{"a host that only starts like an allowed one", mirror, "registry.example.com.evil.io/etcd:v3.6.16", false},
		{"a Docker Hub short name", mirror, "etcd:3.6", false},
		{"Docker Hub allowed, short name", ImagePolicy{AllowedRegistries: []string{"docker.io/library"}}, "etcd:3.6", true},
		{"Docker Hub allowed, an org's image is not library", ImagePolicy{AllowedRegistries: []string{"docker.io/library"}}, "someone/etcd:3.6", false},
		{"a registry with a port", ImagePolicy{AllowedRegistries: []string{"localhost:5000"}}, "localhost:5000/quorate/etcd:v3.6.16", true},
		{"digests required, a tag", ImagePolicy{RequireDigests: true}, "registry.example.com/etcd:v3.6.16", false},
		{"digests required, a digest", ImagePolicy{RequireDigests: true}, "registry.example.com/etcd" + digest, true},
		{"both, a digest elsewhere", ImagePolicy{RequireDigests: true, AllowedRegistries: []string{"registry.example.com"}}, "quay.io/etcd" + digest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.policy.Check(tc.image); (err == nil) != tc.ok {
				t.Errorf("Check(%s) = %v, want allowed %v", tc.image, err, tc.ok)
			}
		})
	}
}
