package etcdcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/certificates"
	"github.com/quorate-dev/quorate/controllers/ownership"
	"github.com/quorate-dev/quorate/controllers/settle"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/expectations"
	"github.com/quorate-dev/quorate/internal/metrics"
	"github.com/quorate-dev/quorate/internal/mutant"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
	"github.com/quorate-dev/quorate/internal/storagepolicy"
	"github.com/quorate-dev/quorate/internal/uidpolicy"
)

// Reconciler reconciles EtcdClusters.
type Reconciler struct {
	client.Client
	// APIReader reads Secrets without caching every Secret of the cluster.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	Images    resources.Images
	// UIDs chooses, per namespace, whether pods ask for a user or leave it to the platform
	// (nil: they ask for 65532).
	UIDs         *uidpolicy.Policy
	EtcdFactory  etcd.Factory
	Expectations *expectations.Expectations
	// ResyncPeriod is how often a settled cluster's health is checked again.
	ResyncPeriod time.Duration
	// StepDelay is the pause after a membership step before the next observation.
	StepDelay time.Duration
	// Settings feed the planner: the roll settle time and the deadlines.
	Settings Settings
	// Ownership is this instance's claim on the clusters it manages (nil: no claims).
	Ownership *ownership.Ownership
	// AllowPlaintext lets the operator manage clusters with TLS off.
	AllowPlaintext bool
	// StoragePolicy is the administrator's rule for the locations restores come from.
	StoragePolicy storagepolicy.Policy
	// CertLifetime is the lifetime of the certificates the operator generates (default
	// pki.LeafValidity); they are renewed with a third of it left.
	CertLifetime time.Duration
	// CertPropagation is how long each phase of a CA rotation lasts at least: the kubelet's
	// delay in projecting an updated Secret into the pods that mount it (2 minutes by default).
	CertPropagation time.Duration
	// Operator selects the operator's own pods in the clusters' NetworkPolicies.
	Operator resources.Operator
	// ConsistencyInterval is how often a cluster's voters' data are compared (HashKV at one
	// revision); 0 turns the comparison off.
	ConsistencyInterval time.Duration

	// certs does the pass's certificate work (package certificates); setup builds it.
	certs Certificates
	// checks remembers each cluster's last consistency check.
	checks consistencyChecks
	// carried are the maintenance records of passes stopped for their claim before their
	// status write, for the next pass that holds the claim (carry.go).
	carried carried
	// drainRefused are the pods (by UID) the API server refused to take out of the client
	// Service: they are stopped without (until the operator restarts and tries again).
	drainRefused sync.Map
	// defragWarned: the UID and generation of each cluster last warned of a defragmentation
	// schedule that runs more often than Settings.MinDefragInterval.
	defragWarned sync.Map
	// removalRefusals counts, per cluster, the passes in a row whose removal the quorum probe
	// refused (removalWaits): the probe is repeated less often as they add up.
	removalRefusals sync.Map
}

// removalRefused records one more refusal in a row of key's removal and returns how many came
// before it.
func (r *Reconciler) removalRefused(key types.NamespacedName) int {
	n := 0
	if v, ok := r.removalRefusals.Load(key); ok {
		n = v.(int)
	}
	r.removalRefusals.Store(key, n+1)
	return n
}

// Certificates is what a pass needs of the cluster's certificates (package certificates).
// What they find for the status comes back as shares, which the pass folds (fold.go).
type Certificates interface {
	// Warm reads the cluster's Secrets in one request the first time a pass meets the cluster.
	Warm(ctx context.Context, cluster types.NamespacedName) error
	// Forget drops what is remembered of a deleted cluster.
	Forget(cluster types.NamespacedName)
	// EnsureTLS checks or issues and renews the certificates before any member needs them;
	// its share is the first certificate to expire and the CertificatesValid condition.
	EnsureTLS(ctx context.Context, c *v1alpha1.EtcdCluster) (certificates.Share, error)
	// ClientTLS is the TLS configuration the operator dials the members with.
	ClientTLS(ctx context.Context, c *v1alpha1.EtcdCluster) (*tls.Config, error)
	// SyncUsers gives the application users their Secrets and, from a settled pass, etcd's
	// users and roles; its share (the users, authentication, an earlier expiry) comes with an
	// error too.
	SyncUsers(ctx context.Context, c *v1alpha1.EtcdCluster, cl etcd.Client, settled bool) (certificates.Share, error)
	// Advance records a requested renewal as done and moves a CA rotation along.
	Advance(c *v1alpha1.EtcdCluster, settled bool, now time.Time) []certificates.Share
}

// The verbs the code uses, and no more (the controllers' tests count every write by verb):
// +kubebuilder:rbac:groups=etcd.quorate.dev,resources=etcdclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=etcd.quorate.dev,resources=etcdclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=pods;persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=list
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups=etcd.quorate.dev,resources=etcdbackups,verbs=get;list;watch

// stepRetries paces the passes of a cluster whose step failed: from 5 ms, doubling, but at most
// 30 s apart (client-go's default goes up to 16 minutes). A step refused for a reason that
// lifts without touching the cluster (a volume quota, an admission webhook, an API outage)
// is taken again within 30 s of the reason going, not minutes later.
func stepRetries() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 30*time.Second),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Reconcile is one pass over one EtcdCluster: prepare what members need, observe everything
// once, settle the cluster's identity, plan one step, take it, and report.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.pass(ctx, req)
	return settle.Result(ctx, res, err)
}

// withDefaults fills in what the spec leaves out (v1alpha1's Default: the quota from the
// volume's size, say) for this pass alone; the stored spec is not changed.
func withDefaults(c *v1alpha1.EtcdCluster) {
	quotaSet := c.Spec.Etcd.QuotaBackendBytes != 0
	c.Default()
	if !quotaSet && mutant.On("quota-ignores-volume") {
		c.Spec.Etcd.QuotaBackendBytes = v1alpha1.DefaultQuotaBackendBytes
	}
}

func (r *Reconciler) pass(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c, q, err := r.current(ctx, req)
	if c == nil {
		return q.result(ctx), err
	}
	original := c.DeepCopy()
	withDefaults(c)
	// Ownership: only the operator instance that holds the cluster's claim acts on it.
	hold, q, err := r.holdClaim(ctx, c)
	if !hold.Act {
		return q.result(ctx), err
	}
	ctx = withHold(ctx, hold)
	// What a pass stopped for its claim did, now that the claim is held again.
	fold(c, r.carried.share(c))
	// Deleted mid-join (FinalizerJoin): the operator's members leave the external cluster first.
	if !c.DeletionTimestamp.IsZero() {
		return r.abort(ctx, original, c)
	}
	if q, changed, err := r.keepFinalizer(ctx, c, holdsJoin(c)); changed {
		return q.result(ctx), err
	}
	// Prepare: certificates and Services exist before any member needs them.
	if reason, err := r.prepare(ctx, c); err != nil {
		return r.fail(ctx, original, c, reason, err)
	}
	obs, clusterID, res, done, err := r.observeIdentified(ctx, original, c)
	if done {
		return res, err
	}
	defer obs.close()
	// Plan and act: one step.
	state, action, q, execErr := r.step(ctx, c, obs, clusterID)
	// Report: status once, Events on changes, metrics.
	return r.report(ctx, original, c, obs, state, action, q, execErr)
}

// observeIdentified is what every pass that plans reads first. Observe: Pods, PVCs and etcd,
// read once; nothing after it reads them again. Then the cache must show the operator's own
// changes, and identity is settled: which cluster the members must belong to, and a backup to
// start from. done says the pass ends here, with res and err; otherwise the caller closes obs.
func (r *Reconciler) observeIdentified(ctx context.Context, original, c *v1alpha1.EtcdCluster) (obs *observation, clusterID uint64, res ctrl.Result, done bool, err error) {
	obs, err = r.observe(ctx, c)
	if err != nil {
		res, err = r.fail(ctx, original, c, v1alpha1.ReasonObserveFailed, err)
		return nil, 0, res, true, err
	}
	if q, err := r.clearView(ctx, c, obs); err != nil || q.after > 0 {
		obs.close()
		if err != nil {
			res, err = r.fail(ctx, original, c, v1alpha1.ReasonObserveFailed, err)
			return nil, 0, res, true, err
		}
		return nil, 0, q.result(ctx), true, nil
	}
	clusterID, reason, err := r.settleIdentity(ctx, c, obs)
	if err != nil {
		obs.close()
		res, err = r.fail(ctx, original, c, reason, err)
		return nil, 0, res, true, err
	}
	return obs, clusterID, ctrl.Result{}, false, nil
}

// current reads the cluster a pass is about; nil when there is nothing to do for it (deleted,
// being deleted with no join to abort, or only in an out-of-date copy), with when to look again.
func (r *Reconciler) current(ctx context.Context, req ctrl.Request) (*v1alpha1.EtcdCluster, requeue, error) {
	c := &v1alpha1.EtcdCluster{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.Expectations.Forget(req.NamespacedName)
			r.certs.Forget(req.NamespacedName)
			r.Ownership.Forget(req.NamespacedName)
			r.checks.forget(req.NamespacedName)
			r.carried.forget(req.NamespacedName)
			r.defragWarned.Delete(req.NamespacedName)
			r.removalRefusals.Delete(req.NamespacedName)
			metrics.ForgetCluster(req.Namespace, req.Name)
			return nil, requeue{}, nil
		}
		return nil, requeue{}, err
	}
	if !c.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(c, v1alpha1.FinalizerJoin) {
		// Owner references let the garbage collector delete members, volumes and secrets.
		return nil, requeue{}, nil
	}
	if !r.Expectations.OwnerCurrent(req.NamespacedName, c.ResourceVersion) {
		// The cached cluster predates the operator's last status write: its status is not the
		// one recorded, and a pass from it would announce and write old news again.
		logf.FromContext(ctx).V(1).Info("cache is behind the operator's last status write", "resourceVersion", c.ResourceVersion)
		return nil, requeue{after: time.Second, reason: "the cached cluster predates the last status write"}, nil
	}
	return c, requeue{}, nil
}

// holdClaim takes or renews the cluster's claim; a pass acts only while this instance holds it,
// and within the hold it returns (mayAct). Holding it, it reads the cluster's Secrets in one
// request the first time.
func (r *Reconciler) holdClaim(ctx context.Context, c *v1alpha1.EtcdCluster) (ownership.Hold, requeue, error) {
	hold, err := r.Ownership.Claim(ctx, r.Client, r.APIReader, r.Recorder, c)
	if err != nil {
		return ownership.Hold{}, requeue{}, err
	}
	if !hold.Act {
		logf.FromContext(ctx).V(1).Info("not acting on the cluster", "holder", hold.Holder, "why", hold.Why)
		after := r.Ownership.Term / 4
		if hold.Soon {
			after = claimRetry
		}
		return hold, requeue{after: after, reason: hold.Why}, nil
	}
	if err := r.certs.Warm(ctx, client.ObjectKeyFromObject(c)); err != nil {
		return ownership.Hold{}, requeue{}, fmt.Errorf("listing the cluster's Secrets: %w", err)
	}
	fold(c, statusShare{operator: &hold.Holder})
	return hold, requeue{}, nil
}

// prepare checks the spec and makes the certificates, Services and NetworkPolicy exist before
// any member needs them; a failure comes with its reason.
func (r *Reconciler) prepare(ctx context.Context, c *v1alpha1.EtcdCluster) (string, error) {
	if err := validateSpec(c, r.AllowPlaintext); err != nil {
		return v1alpha1.ReasonInvalidSpec, err
	}
	if msg := defragScheduleLimit(c, r.Settings.MinDefragInterval); msg != "" {
		// Once per generation: an Event on every pass would crowd out the cluster's others.
		key, at := client.ObjectKeyFromObject(c), fmt.Sprintf("%s/%d", c.UID, c.Generation)
		if seen, _ := r.defragWarned.Swap(key, at); seen != at {
			r.Recorder.Event(c, corev1.EventTypeWarning, v1alpha1.EventDefragScheduleLimited, msg)
		}
	}
	// Certificates are renewed when due while a formed cluster is paused: an expired
	// certificate would break the cluster that pausing means to leave alone.
	// spec.tls.renewCertificates waits; a paused cluster that has not formed gets nothing.
	if c.Spec.Paused && c.Status.ClusterID == "" {
		if err := checkUsers(c); err != nil {
			return v1alpha1.ReasonInvalidSpec, err
		}
		return "", nil
	}
	tlsShare, err := r.certs.EnsureTLS(ctx, c)
	if err != nil {
		return v1alpha1.ReasonTLSNotReady, err
	}
	fold(c, statusShare{certs: []certificates.Share{tlsShare}})
	// A user named as the operator's own identity holds the users back (their Secrets are
	// issued in the same pass, paused or not), not the certificates above.
	if err := checkUsers(c); err != nil {
		return v1alpha1.ReasonInvalidSpec, err
	}
	if c.Spec.Paused {
		return "", nil
	}
	if err := r.ensureServices(ctx, c); err != nil {
		return v1alpha1.ReasonServicesNotReady, err
	}
	if err := r.ensureNetworkPolicy(ctx, c); err != nil {
		return v1alpha1.ReasonNetworkPolicyNotReady, err
	}
	// The image policy holds members back, not the certificates, Services and NetworkPolicy
	// above: a cluster left running on an image outside a policy set later keeps certificates
	// that are renewed while someone changes its image. (The launcher is checked at start.)
	if err := r.Images.Policy.Check(r.Images.EtcdImage(c)); err != nil {
		return v1alpha1.ReasonImageNotAllowed, fmt.Errorf("%w; no member is started or changed until then (the certificates are still renewed)", err)
	}
	return "", nil
}

// clearView removes what an earlier EtcdCluster of this name left, and waits for the cache to
// show the operator's own changes before anything is planned from it.
func (r *Reconciler) clearView(ctx context.Context, c *v1alpha1.EtcdCluster, obs *observation) (requeue, error) {
	log := logf.FromContext(ctx)
	// What an earlier EtcdCluster of this name left goes first, as the garbage collector
	// would take it: its pods are no members of this cluster, its volumes no data of it.
	for _, obj := range obs.leftovers {
		if _, err := r.removeLeftover(ctx, c, obj); err != nil {
			return requeue{}, err
		}
	}
	if obs.etcdErr != nil && !errors.Is(obs.etcdErr, etcd.ErrNoEndpoints) {
		log.Info("etcd did not answer", "error", obs.etcdErr.Error(), "unanswered", len(obs.statusErrs))
	}
	if ok, why := r.Expectations.Satisfied(client.ObjectKeyFromObject(c), obs.cached); !ok {
		log.V(1).Info("cache is behind the operator's own changes", "waiting", why)
		return requeue{after: time.Second, reason: "the cache is behind the operator's own changes"}, nil
	}
	return requeue{}, nil
}

// settleIdentity settles which cluster the members must belong to and, for a cluster created
// from a backup, the backup it starts from; a failure comes with its reason.
func (r *Reconciler) settleIdentity(ctx context.Context, c *v1alpha1.EtcdCluster, obs *observation) (uint64, string, error) {
	clusterID, err := r.identify(c, obs)
	if err != nil {
		return 0, v1alpha1.ReasonRecordClusterIDFailed, err
	}
	if clusterID != 0 {
		fold(c, statusShare{clusterID: names.FormatID(clusterID)})
		// Also while paused: the record that a member has run is what keeps its pod from
		// bootstrapping or restoring a backup again onto an emptied volume.
		if err := r.annotateVolumes(ctx, c, obs); err != nil {
			return 0, v1alpha1.ReasonRecordClusterIDFailed, err
		}
	}
	// A cluster created from a backup needs it before its members exist.
	if clusterID == 0 && c.Spec.Bootstrap != nil && c.Spec.Bootstrap.FromBackup != nil {
		if obs.restore, err = r.restoreSource(ctx, c); err != nil {
			if refused := (*storagepolicy.Refused)(nil); errors.As(err, &refused) {
				return 0, v1alpha1.ReasonStorageNotAllowed, err
			}
			return 0, v1alpha1.ReasonRestoreSourceNotReady, err
		}
	}
	return clusterID, "", nil
}

// step plans one step, takes it, keeps the objects that follow the membership and the users
// in line, and moves a join and a CA rotation along.
func (r *Reconciler) step(ctx context.Context, c *v1alpha1.EtcdCluster, obs *observation, clusterID uint64) (planner.State, planner.Action, requeue, error) {
	state := obs.buildState(c, clusterID, time.Now(), r.Settings)
	state.Consistency = r.consistency(ctx, c, obs, state)
	metrics.SetDivergent(c.Namespace, c.Name, divergentMembers(state))
	action := planner.Plan(state, obs.memberName)
	logf.FromContext(ctx).V(1).Info("planned", "action", action.String())
	q, share, execErr := r.execute(ctx, c, obs, state, action)
	fold(c, share)
	// A removal that waits for the voters that stay is no failed step: as with any wait, the
	// objects that follow the membership and the users are kept in line; report says why.
	var waits *removalWaits
	var waiting error
	if errors.As(execErr, &waits) {
		waiting, execErr = execErr, nil
	}
	if execErr == nil {
		execErr = r.Ownership.InTerm(holdOf(ctx))
	}
	if execErr == nil {
		execErr = r.upkeep(ctx, c, obs, state)
	}
	if execErr == nil {
		var users certificates.Share
		users, execErr = r.certs.SyncUsers(ctx, c, obs.client, action.Kind == planner.None)
		fold(c, statusShare{certs: []certificates.Share{users}})
	}
	if execErr == nil && waiting == nil {
		fold(c, r.advanceJoin(c, state, action))
		// A CA rotation moves on only from a settled pass (it changes what members trust).
		fold(c, statusShare{certs: r.certs.Advance(c, action.Kind == planner.None, time.Now())})
	}
	outcome := string(action.Kind)
	switch {
	case execErr != nil:
		outcome = "Error"
	case waiting != nil:
		outcome, execErr = string(planner.Wait), waiting
	}
	metrics.CountReconcile(c.Namespace, c.Name, outcome)
	return state, action, q, execErr
}

// report writes the status once, and ends the pass: a refused membership change is a wait, any
// other error goes back for backoff.
func (r *Reconciler) report(ctx context.Context, original, c *v1alpha1.EtcdCluster, obs *observation, state planner.State, action planner.Action, q requeue, execErr error) (ctrl.Result, error) {
	if res, stop := stopForClaim(ctx, errors.Join(execErr, r.Ownership.InTerm(holdOf(ctx)))); stop {
		r.recordBeforeStop(c, execErr)
		return res, nil
	}
	st := computeStatus(c, obs, state, action, execErr)
	if err := r.writeStatus(ctx, original, st); err != nil {
		return ctrl.Result{}, err
	}
	var waits *removalWaits
	if errors.As(execErr, &waits) {
		// Degraded's change to QuorumAtRisk is the Event (eventOnTransitions).
		n := r.removalRefused(client.ObjectKeyFromObject(c))
		logf.FromContext(ctx).Info("a removal would leave the voters that stay without a quorum; probing again", "action", action.String(), "refusals", n+1, "reason", execErr.Error())
		return r.withinClaim(requeue{after: removalRetry(n), reason: "the voters that would stay do not all reach a leader"}).result(ctx), nil
	}
	r.removalRefusals.Delete(client.ObjectKeyFromObject(c))
	if errors.Is(execErr, etcd.ErrUnhealthyCluster) {
		// A wait, not a failure: etcd takes the change once its members have been connected
		// long enough. Progressing says so; no backoff, no error log.
		logf.FromContext(ctx).Info("etcd refused a membership change for now; asking again", "action", action.String(), "reason", execErr.Error())
		return r.withinClaim(requeue{after: unhealthyRetry, reason: "etcd refused a membership change for now"}).result(ctx), nil
	}
	if execErr != nil {
		return ctrl.Result{}, execErr
	}
	return r.withinClaim(q).result(ctx), nil
}

// stopForClaim ends a pass stopped for its claim (lost, or its term running low): it may not
// act any more, the status included; the next pass claims or renews it first.
func stopForClaim(ctx context.Context, err error) (ctrl.Result, bool) {
	if !errors.Is(err, ownership.ErrClaimLost) && !errors.Is(err, ownership.ErrTermRunningLow) {
		return ctrl.Result{}, false
	}
	logf.FromContext(ctx).Info("stopped acting on the cluster for this pass", "reason", err.Error())
	return requeue{after: claimRetry, reason: "the claim must be taken or renewed again"}.result(ctx), true
}

// recordBeforeStop keeps what a pass stopped for its claim did for the next pass that holds
// the claim again (carried): it may not write the status itself, since the claim's term may
// have ended during a long step (a defragmentation of a large database) and another install
// may hold it now. Without the record, every such pass would take its step again and the round
// it belongs to would never advance. A lost claim keeps nothing.
func (r *Reconciler) recordBeforeStop(c *v1alpha1.EtcdCluster, execErr error) {
	if errors.Is(execErr, ownership.ErrClaimLost) {
		return
	}
	r.carried.keep(c)
}

// claimRetry is how soon a pass that stopped for its claim (lost, or its term running low)
// is followed by one that claims or renews it.
const claimRetry = time.Second

// unhealthyRetry is how soon a pass asks again after etcd refused a membership change because
// its members have not been connected to one another for long enough (etcd.ErrUnhealthyCluster).
const unhealthyRetry = 2 * time.Second

// fail records an error that stopped the pass before planning, then returns it for backoff.
func (r *Reconciler) fail(ctx context.Context, original, c *v1alpha1.EtcdCluster, reason string, err error) (ctrl.Result, error) {
	if res, stop := stopForClaim(ctx, errors.Join(err, r.Ownership.InTerm(holdOf(ctx)))); stop {
		return res, nil
	}
	metrics.CountReconcile(c.Namespace, c.Name, "Error")
	if serr := r.writeStatus(ctx, original, errorStatus(original, c.Status.Operator, c.Generation, reason, err)); serr != nil {
		return ctrl.Result{}, errors.Join(err, serr)
	}
	return ctrl.Result{}, fmt.Errorf("%s: %w", reason, err)
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return r.setup(mgr, concurrency, r)
}

// setup registers rec (r itself, or a wrapper of it in tests) as the EtcdCluster controller.
func (r *Reconciler) setup(mgr ctrl.Manager, concurrency int, rec reconcile.Reconciler) error {
	if r.ResyncPeriod == 0 {
		r.ResyncPeriod = 30 * time.Second
	}
	if r.StepDelay == 0 {
		r.StepDelay = time.Second
	}
	if r.certs == nil {
		r.certs, r.Client = certificates.New(r.Client, r.APIReader, r.Recorder, ownedObjects{r}, r.CertLifetime, r.CertPropagation)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.EtcdCluster{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Owns(&corev1.Service{}, builder.OnlyMetadata).
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Owns(&policyv1.PodDisruptionBudget{}, builder.OnlyMetadata).
		Owns(&networkingv1.NetworkPolicy{}, builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, RateLimiter: stepRetries()}).
		Named("etcdcluster").
		Complete(rec)
}
