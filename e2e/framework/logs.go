package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/quorate-dev/quorate/e2e/label"
)

// operatorLog is what the operator's pods (in --operator-namespace) logged since the scenario
// started, each pod's part under a header naming it: what the operator decided during the
// scenario, and why. A pod deleted meanwhile (operator-kill) took its log with it.
func (r *Run) operatorLog(ctx context.Context, since metav1.Time) ([]byte, error) {
	pods, err := r.Suite.Clientset.CoreV1().Pods(r.Suite.Opts.OperatorNS).List(ctx, metav1.ListOptions{LabelSelector: label.OperatorSelector})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	for _, p := range pods.Items {
		b, err := r.Suite.Clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: label.OperatorContainer, SinceTime: &since}).DoRaw(ctx)
		if err != nil {
			fmt.Fprintf(&out, "=== pod %s/%s: no log: %v\n", p.Namespace, p.Name, err)
			continue
		}
		fmt.Fprintf(&out, "=== pod %s/%s, since %s\n", p.Namespace, p.Name, since.UTC().Format("15:04:05"))
		out.Write(b)
	}
	return out.Bytes(), nil
}

// saveOperatorLog writes operatorLog into path; a failure to read it is logged, not fatal.
func (r *Run) saveOperatorLog(ctx context.Context, since metav1.Time, path string) {
	b, err := r.operatorLog(ctx, since)
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		r.T.Logf("keeping the operator's log: %v", err)
	}
}
