package framework

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// FailpointPort is where an etcd image built with its failpoints (hack/images.sh
// etcd-failpoints: GOFAIL_HTTP in its environment) serves their control.
const FailpointPort = 22381

// FailpointImage is the prerequisite of the failpoint scenarios: an etcd image built with
// gofail, given with --failpoint-etcd-image.
var FailpointImage = Prerequisite{Name: "an etcd image built with failpoints", Missing: func(_ context.Context, r *Run) (string, error) {
	if r.Suite.Opts.FailpointImage == "" {
		return "--failpoint-etcd-image is not set (make e2e-failpoints builds the image, hack/images.sh etcd-failpoints, and gives it)", nil
	}
	return "", nil
}}

// FailpointUpgradeImages is the prerequisite of the failpoint scenarios of an upgrade: etcd
// images built with gofail at both versions, given with --failpoint-upgrade-from-image and
// --failpoint-etcd-image.
var FailpointUpgradeImages = Prerequisite{Name: "etcd images built with failpoints at both versions of the upgrade", Missing: func(_ context.Context, r *Run) (string, error) {
	if r.Suite.Opts.FailpointImage == "" || r.Suite.Opts.FailpointUpgradeFromImage == "" {
		return "--failpoint-etcd-image and --failpoint-upgrade-from-image are not both set (make e2e-failpoints builds both images, hack/images.sh etcd-failpoints, and gives them)", nil
	}
	return "", nil
}}

// failpoint sends a request to the failpoint control of a member's etcd through the API
// server's pod proxy.
func (r *Run) failpoint(ctx context.Context, method, member, path, body string) (string, error) {
	req := r.Suite.Clientset.CoreV1().RESTClient().Verb(method).Namespace(r.Namespace).Resource("pods").
		Name(fmt.Sprintf("%s:%d", member, FailpointPort)).SubResource("proxy").Suffix(path)
	if body != "" {
		req = req.Body([]byte(body))
	}
	out, err := req.DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("%s %s on %s's failpoint control: %w", method, path, member, err)
	}
	return string(out), nil
}

// ArmFailpoint sets etcd's failpoint name on member to action (gofail's terms: panic,
// sleep(100), 1*panic, off), and records it on the timeline.
func (r *Run) ArmFailpoint(ctx context.Context, member, name, action string) error {
	if _, err := r.failpoint(ctx, "PUT", member, name, action); err != nil {
		return err
	}
	// Once armed: a request that failed (a pod between processes) armed nothing.
	r.Event("fault", "failpoint", fmt.Sprintf("%s=%s on %s", name, action, member))
	return nil
}

// DisarmFailpoint turns failpoint name on member off.
func (r *Run) DisarmFailpoint(ctx context.Context, member, name string) error {
	r.Event("note", "failpoint", fmt.Sprintf("%s off on %s", name, member))
	_, err := r.failpoint(ctx, "DELETE", member, name, "")
	return err
}

// FailpointCount is how many times failpoint name fired on member since it was armed.
func (r *Run) FailpointCount(ctx context.Context, member, name string) (int, error) {
	out, err := r.failpoint(ctx, "GET", member, name+"/count", "")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("failpoint %s on %s: count %q is not a number", name, member, out)
	}
	return n, nil
}
