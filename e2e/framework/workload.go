package framework

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/quorate-dev/quorate/e2e/localcluster"
	"github.com/quorate-dev/quorate/e2e/workload"
	"github.com/quorate-dev/quorate/e2e/workloadapi"
)

func (r *Run) workloadPod() *corev1.Pod {
	rate := r.Suite.Opts.Rate
	if r.Scenario.Rate > 0 {
		rate = r.Scenario.Rate
	}
	cc := r.Op().Client(r)
	args := []string{}
	if r.Suite.Opts.OpenLoop || r.Scenario.OpenLoop {
		args = append(args, "--open-loop")
	}
	// The default profile alone keeps the arguments a workload image of an earlier release
	// understands.
	profiles := r.profiles()
	if !workload.IsDefault(profiles) {
		args = append(args, "--profiles="+workload.FormatProfiles(profiles), "--service-endpoint="+cc.Service)
	}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if cc.Secret != "" {
		args = append(args, "--tls-dir=/tls")
		volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: cc.Secret}}}}
		mounts = []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}}
	}
	var res corev1.ResourceRequirements
	if q := r.Suite.Opts.workloadCPU; !q.IsZero() {
		// --workload-cpu for each profile's load.
		res.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(q.MilliValue()*int64(len(profiles)), q.Format)}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "workload", Namespace: r.Namespace, Labels: map[string]string{"app": "quorate-workload"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "workload",
				Image: r.Suite.Opts.WorkloadImage,
				Args: append([]string{
					"--endpoints=" + strings.Join(cc.Endpoints, ","),
					"--server-name=" + cc.ServerName,
					"--peer-service=" + cc.PeerService,
					fmt.Sprintf("--clients=%d", r.Suite.Opts.Clients),
					fmt.Sprintf("--rate=%g", rate),
				}, args...),
				Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: workloadapi.Port}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: workloadapi.Healthz.URLPath(), Port: intstr.FromInt32(workloadapi.Port)}}, PeriodSeconds: 2},
				VolumeMounts:   mounts,
				Resources:      res,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, RunAsNonRoot: ptr.To(true)},
			}},
			Volumes:      volumes,
			NodeSelector: r.workloadNodeSelector(),
			// Restricted as Pod Security Admission's "restricted" asks; no user: the image's
			// USER, or the platform's choice (PROFILE=openshift-like assigns one from a range).
			SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		},
	}
}

// profiles are the client profiles the run's workload runs: the suite's (--client-profiles),
// but for a scenario that starts on an external cluster (Scenario.External) not service-only,
// whose one endpoint, the client Service, has no member until the steps create the
// EtcdCluster (member-aware alone when nothing is left).
func (r *Run) profiles() []workload.Profile {
	ps := r.Suite.Opts.Profiles()
	if r.Scenario.External == nil {
		return ps
	}
	ps = slices.DeleteFunc(slices.Clone(ps), func(p workload.Profile) bool { return p == workload.ServiceOnly })
	if len(ps) == 0 {
		return []workload.Profile{workload.MemberAware}
	}
	return ps
}

// workloadNodeSelector keeps a node scenario's workload on node 1 (checkNodes).
func (r *Run) workloadNodeSelector() map[string]string {
	if !r.pools {
		return nil
	}
	return map[string]string{localcluster.PoolLabel: localcluster.PoolSystem}
}

// Workload is the client of the run's workload, through the API server's pod proxy.
func (r *Run) Workload() workloadapi.Client {
	if r.transport != nil {
		return workloadapi.Client{Transport: r.transport}
	}
	return workloadapi.Client{Transport: r.proxy}
}

// proxy sends a request to the workload through the API server's pod proxy; path may carry a
// query.
func (r *Run) proxy(ctx context.Context, method, path string) ([]byte, error) {
	p, query, _ := strings.Cut(path, "?")
	req := r.Suite.Clientset.CoreV1().RESTClient().Verb(method).Namespace(r.Namespace).Resource("pods").Name(fmt.Sprintf("workload:%d", workloadapi.Port)).SubResource("proxy").Suffix(p)
	if values, err := url.ParseQuery(query); err == nil {
		for k, vs := range values {
			for _, v := range vs {
				req = req.Param(k, v)
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	return req.DoRaw(ctx)
}

// wait blocks for d while the load runs (a measurement window, not a wait for a condition).
func wait(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (r *Run) progress(ctx context.Context, start time.Time) {
	if r.Suite.Opts.Quiet {
		return
	}
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			st, err := r.Workload().Stats(ctx)
			if err != nil {
				continue
			}
			r.mu.Lock()
			phase := r.phase
			r.mu.Unlock()
			if len(st.Profiles) == 0 {
				fmt.Fprintf(os.Stderr, "[%s] %4.0fs ok=%d fail=%d unknown=%d samples=%d  %s\n", r.Scenario.Name, time.Since(start).Seconds(), st.OK, st.Fail, st.Unknown, st.Samples, phase)
				continue
			}
			counts := make([]string, len(st.Profiles))
			for i, p := range st.Profiles {
				counts[i] = fmt.Sprintf("%s ok=%d fail=%d unknown=%d", p.Profile, p.OK, p.Fail, p.Unknown)
			}
			fmt.Fprintf(os.Stderr, "[%s] %4.0fs %s samples=%d  %s\n", r.Scenario.Name, time.Since(start).Seconds(), strings.Join(counts, "; "), st.Samples, phase)
		}
	}
}

// Probe has the workload write key outside its history and returns etcd's error ("" when the
// write went through).
func (r *Run) Probe(ctx context.Context, key string) (string, error) {
	res, err := r.Workload().Probe(ctx, key)
	r.Event("action", "probe", fmt.Sprintf("write %s: %q", key, res.Error))
	return res.Error, err
}

// Lease has the workload grant a lease of ttl seconds, put n keys on it outside its history,
// and keep it alive for the rest of the run (or until Revoke).
func (r *Run) Lease(ctx context.Context, ttl int64, n int) (workload.LeaseResult, error) {
	res, err := r.Workload().Lease(ctx, ttl, n)
	if err == nil && res.Error != "" {
		err = fmt.Errorf("granting a lease and putting %d keys on it: %s", n, res.Error)
	}
	if err != nil {
		r.Event("action", "lease", fmt.Sprintf("a lease of %d s with %d keys failed: %v", ttl, n, err))
	} else {
		r.Event("action", "lease", fmt.Sprintf("lease %x (TTL %d s) with %d keys, the last at revision %d", res.ID, ttl, res.Keys, res.Revision))
	}
	return res, err
}

// Revoke has the workload revoke lease id, which Lease granted; the keys on it are deleted.
func (r *Run) Revoke(ctx context.Context, id int64) (workload.LeaseResult, error) {
	res, err := r.Workload().Revoke(ctx, id)
	if err == nil && res.Error != "" {
		err = fmt.Errorf("revoking lease %x: %s", id, res.Error)
	}
	if err != nil {
		r.Event("action", "revoke", fmt.Sprintf("revoking lease %x failed: %v", id, err))
	} else {
		r.Event("action", "revoke", fmt.Sprintf("lease %x revoked at revision %d", id, res.Revision))
	}
	return res, err
}

// TLSChange is one state of the workload's mounted certificate files (GET /tls).
type TLSChange = workloadapi.TLSChange

// TLSChanges returns every state of the workload's certificate files, the first one included.
func (r *Run) TLSChanges(ctx context.Context) ([]TLSChange, error) {
	return r.Workload().TLSChanges(ctx)
}

// WaitTLSChange waits until the workload's certificate files change after t (the kubelet
// projected an updated Secret) and returns when the workload saw it.
func (r *Run) WaitTLSChange(ctx context.Context, t time.Time) (time.Time, error) {
	var at time.Time
	err := r.WaitFor(ctx, "the workload's certificate files to change", 5*time.Minute, func() error {
		cs, err := r.TLSChanges(ctx)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if c.Time > t.UnixNano() {
				at = time.Unix(0, c.Time)
				return nil
			}
		}
		return fmt.Errorf("%d states, none after %s", len(cs), t.Format(time.RFC3339Nano))
	})
	return at, err
}

// StartTime is when the load started (Unix nanoseconds), for offsets on the timeline.
func (r *Run) StartTime() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started.UnixNano()
}
