package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// An unset quota follows the volume: the database, one copy of it and etcd's log fit; never
// under the smallest quota the API takes, never over etcd's default.
func TestQuotaFor(t *testing.T) {
	for size, want := range map[string]int64{
		"64Mi":  16 << 20,  // below what fits: the API's minimum
		"200Mi": 36 << 20,  // (200-128)/2
		"256Mi": 64 << 20,  // the conformance suite's volumes
		"1Gi":   448 << 20, // the sample's
		"1G":    412 << 20, // (1000000000-128Mi)/2 = 412.8Mi, in whole MiB
		"8Gi":   2 << 30,   // etcd's default at most
	} {
		if got := QuotaFor(resource.MustParse(size)); got != want {
			t.Errorf("QuotaFor(%s) = %d (%dMi), want %d (%dMi)", size, got, got>>20, want, want>>20)
		}
	}
}
