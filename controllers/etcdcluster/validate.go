package etcdcluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/cronspec"
	"github.com/quorate-dev/quorate/internal/names"
)

// validateSpec checks what the CRD schema cannot within its cost budget: the keys of the pod
// template's labels, annotations and node selector (their values are checked by the schema).
// A spec that fails stops the pass with the InvalidSpec condition, before any member is built
// from it.
func validateSpec(c *v1alpha1.EtcdCluster, allowPlaintext bool) error {
	if !c.Spec.TLS.IsEnabled() && !allowPlaintext {
		return errors.New("spec.tls.enabled is false, but this operator does not run plaintext clusters: anyone who reaches the members could read and write them; remove tls.enabled, or start the operator with --allow-plaintext")
	}
	if d := c.Spec.Maintenance.Defrag; d != nil && d.Schedule != "" {
		// A schedule that matches no date is never due (planinput), as before it was refused:
		// refusing it now would stop every pass of a cluster that has one.
		if _, err := cronspec.Parse(d.Schedule, 0); err != nil && !errors.Is(err, cronspec.ErrNeverRuns) {
			return fmt.Errorf("spec.maintenance.defrag.schedule %q %v: use five cron fields such as \"0 3 * * 0\", or @daily, @every 12h", d.Schedule, err)
		}
	}
	t := c.Spec.PodTemplate
	if t == nil {
		return nil
	}
	var problems []string
	check := func(field string, keys []string) {
		sort.Strings(keys)
		for _, k := range keys {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				problems = append(problems, fmt.Sprintf("spec.podTemplate.%s key %q: %s", field, k, strings.Join(errs, "; ")))
			}
		}
	}
	check("labels", keysOf(t.Labels))
	check("annotations", keysOf(t.Annotations))
	check("nodeSelector", keysOf(t.NodeSelector))
	for _, k := range slices.Sorted(maps.Keys(t.Annotations)) {
		if p := weakeningPrefix(k, t.Annotations[k]); p != "" {
			problems = append(problems, fmt.Sprintf("spec.podTemplate.annotations %s=%s: annotations under %s may only ask for the runtime's default profile (runtime/default, docker/default): members run with the cluster's keys, so a profile other than the default (unconfined, localhost/...) or a request to the container runtime is refused; remove it", k, t.Annotations[k], p))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s; correct the spec: no member is created or changed until then", strings.Join(problems, "; "))
	}
	return nil
}

// defragScheduleLimit says, for a spec.maintenance.defrag.schedule that runs more often than
// minInterval, that its rounds run no more often than that ("" for any other spec). It is
// no refusal: a cluster stored with such a schedule keeps every other pass.
func defragScheduleLimit(c *v1alpha1.EtcdCluster, minInterval time.Duration) string {
	d := c.Spec.Maintenance.Defrag
	if d == nil || d.Schedule == "" || minInterval <= 0 {
		return ""
	}
	sched, err := cronspec.Parse(d.Schedule, 0)
	if err != nil {
		return ""
	}
	if shortest := cronspec.Shortest(sched); shortest < minInterval {
		return fmt.Sprintf("spec.maintenance.defrag.schedule %q runs every %s, more often than the operator allows (--min-defrag-interval %s): each round blocks every member in turn, so scheduled rounds start at least %s apart; write a schedule that runs less often, or use defrag.thresholdPercent to defragment when free pages pile up", d.Schedule, shortest, minInterval, minInterval)
	}
	return ""
}

// checkUsers refuses a user named as one of the operator's own identities. CEL refuses these
// names when a spec is written; a cluster stored before that rule could still declare one, and
// its user's certificate would carry an administrator's name. It runs after the certificates
// are renewed (prepare), so that such a cluster keeps running while its user is removed.
func checkUsers(c *v1alpha1.EtcdCluster) error {
	for _, u := range c.Spec.Users {
		if slices.Contains(reservedUsers(c.Name), u.Name) {
			return fmt.Errorf("spec.users names %s, one of the operator's own identities (%s), whose certificate is an etcd administrator: remove or rename the user (a Secret issued for it by an earlier operator holds an administrator's certificate until it expires: rotate the CA with spec.tls.rotateCA); no user and no member is changed until then (the certificates are still renewed)", u.Name, strings.Join(reservedUsers(c.Name), ", "))
		}
	}
	return nil
}

// reservedUsers are the common names of the certificates the operator issues for cluster name:
// no application user may have one.
func reservedUsers(name string) []string {
	return []string{"root", names.OperatorCN, names.ClientCN, names.ServerCN(name), names.PeerCN(name)}
}

// profilePrefixes are the AppArmor and seccomp annotations: a profile other than the
// runtime's default (unconfined, a localhost profile) can loosen a pod's confinement outside
// its spec. runtimePrefixes are the container runtimes' own annotations (CRI-O and containerd
// act on some: devices, user namespaces), refused whatever their value.
var (
	profilePrefixes = []string{
		"container.apparmor.security.beta.kubernetes.io/",
		"seccomp.security.alpha.kubernetes.io/",
		"container.seccomp.security.alpha.kubernetes.io/",
	}
	runtimePrefixes = []string{"io.kubernetes.cri-o.", "io.kubernetes.cri.", "io.containerd.", "run.oci."}
)

// weakeningPrefix names the prefix of an annotation that would weaken the members' pod
// security ("" when it does not): a runtime annotation, or a profile annotation that asks for
// another profile than the runtime's default (which only hardens).
func weakeningPrefix(key, value string) string {
	for _, p := range runtimePrefixes {
		if strings.HasPrefix(key, p) {
			return p
		}
	}
	for _, p := range profilePrefixes {
		if strings.HasPrefix(key, p) && value != "runtime/default" && value != "docker/default" {
			return p
		}
	}
	return ""
}

func keysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
