// Package statuscond builds the status conditions the EtcdCluster reconciler and its
// certificates report.
package statuscond

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// New is a condition of type t, True when status holds; an empty reason is Unknown.
func New(t string, status bool, reason, message string, gen int64) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	if reason == "" {
		reason = v1alpha1.ReasonUnknown
	}
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: gen}
}
