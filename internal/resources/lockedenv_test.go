package resources

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Under a storage policy, a store pod's explicit variables (which win over its credentials
// Secret's) leave it no endpoint, emulator, configuration file or proxy but the operator's.
func TestLockedStoreEnv(t *testing.T) {
	got := LockedStoreEnv([]corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}, {Name: "NO_PROXY", Value: ".svc"}})
	var want []corev1.EnvVar
	for _, n := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "STORAGE_EMULATOR_HOST", "AZURE_STORAGE_DOMAIN", "AZURE_STORAGE_PROTOCOL",
		"AZURE_STORAGE_IS_LOCAL_EMULATOR", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy", "no_proxy"} {
		want = append(want, corev1.EnvVar{Name: n})
	}
	want = append(want, corev1.EnvVar{Name: "AWS_CONFIG_FILE", Value: "/dev/null"}, corev1.EnvVar{Name: "AWS_SHARED_CREDENTIALS_FILE", Value: "/dev/null"})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LockedStoreEnv:\n got %v\nwant %v", got, want)
	}
}
