package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// UIDChoice says who chooses the user and groups the operator's pods (members, backup and drill
// Jobs) run as.
type UIDChoice string

const (
	// UIDFixed pods ask for user, group and fsGroup PodUID: where nobody assigns them, a volume
	// a CSI driver creates owned by root is made writable by the fsGroup. The zero value.
	UIDFixed UIDChoice = "fixed"
	// UIDPlatform pods ask for none of them: the platform assigns them (OpenShift's
	// restricted-v2 SCC picks the user and fsGroup from the namespace's range and rejects a pod
	// that asks for one outside it). runAsNonRoot stays; the images' numeric USER covers a
	// cluster where nobody assigns a user after all.
	UIDPlatform UIDChoice = "platform"
)

// PodUID is the user, group and fsGroup of UIDFixed pods, and the USER of the operator's image.
const PodUID int64 = 65532

// podSecurityContext is the pod-level security context of every pod the operator builds.
func podSecurityContext(choice UIDChoice) *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if choice != UIDPlatform {
		sc.RunAsUser, sc.RunAsGroup, sc.FSGroup = ptr.To(PodUID), ptr.To(PodUID), ptr.To(PodUID)
	}
	return sc
}
