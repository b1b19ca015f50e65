package resources

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/quorate-dev/quorate/internal/backup"
)

// waitingReasons are the container states in which a pod will not start etcd by itself.
var waitingReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CrashLoopBackOff",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// PodProblem says why a pod (a member's, an archiver's) does not run, from what Kubernetes reports: it
// cannot be scheduled, a container cannot start or keeps crashing, or it has been
// terminating past the deadline (its node does not answer).
func PodProblem(p *corev1.Pod, now time.Time, terminating time.Duration) string {
	if !p.DeletionTimestamp.IsZero() {
		if d := now.Sub(p.DeletionTimestamp.Time); d > terminating {
			return fmt.Sprintf("its pod has been terminating for %s on node %q, which does not finish it; once the node is gone for good, delete the pod with --force", d.Round(time.Second), p.Spec.NodeName)
		}
		return ""
	}
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return fmt.Sprintf("its pod ended (%s: %s)", p.Status.Reason, p.Status.Message)
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			return "its pod cannot be scheduled: " + cond.Message
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		w := cs.State.Waiting
		if w == nil || !slices.Contains(waitingReasons, w.Reason) {
			continue
		}
		why := fmt.Sprintf("its container %s is in %s", cs.Name, w.Reason)
		if w.Message != "" {
			why += ": " + w.Message
		}
		if t := cs.LastTerminationState.Terminated; w.Reason == "CrashLoopBackOff" && t != nil {
			why += fmt.Sprintf(" (last exit code %d", t.ExitCode)
			if res, err := backup.ParseResult(t.Message); err == nil && res.Error != "" {
				why += ": " + res.Error // the restore's fetch-snapshot container
			} else if msg := strings.TrimSpace(t.Message); msg != "" {
				why += ": " + lastLine(msg)
			}
			why += ")"
		}
		return why
	}
	return ""
}

// lastLine is the last line of a message, cut to 200 characters.
func lastLine(s string) string {
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
