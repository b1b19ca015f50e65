// Command quorate-operator is the Quorate manager: it runs the EtcdCluster controller.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-lib/conditions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/controllers/backup"
	"github.com/quorate-dev/quorate/controllers/etcdcluster"
	"github.com/quorate-dev/quorate/controllers/managercache"
	"github.com/quorate-dev/quorate/controllers/ownership"
	"github.com/quorate-dev/quorate/internal/buildinfo"
	"github.com/quorate-dev/quorate/internal/envflag"
	"github.com/quorate-dev/quorate/internal/expectations"
	"github.com/quorate-dev/quorate/internal/memlimit"
	"github.com/quorate-dev/quorate/internal/metricstls"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/planner"
	"github.com/quorate-dev/quorate/internal/resources"
	"github.com/quorate-dev/quorate/internal/storagepolicy"
	"github.com/quorate-dev/quorate/internal/uidpolicy"
	"github.com/quorate-dev/quorate/internal/upgradegate"
)

var scheme = runtime.NewScheme()

// eventCacheEntries is how many Event keys each of the event correlator's caches keeps. With
// client-go's 4096, the three caches held 13 MB once a thousand clusters had been created (a
// key is an Event's source, object, reason and message joined: hundreds of bytes), a fifth of
// the operator's live heap (make bench-scale, docs/reports/scale-rounds.md). Beyond the most recent
// keys an Event is only less aggregated: a repeat is a new Event instead of a higher count, and
// an object's spam-filter bucket starts full again.
const eventCacheEntries = 512

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
}

// identity names this install in the claims it holds: its namespace (leader election keeps
// one active instance per install, so a restarted or new pod of the same install carries on
// without waiting for the claim to expire). Outside a pod, the host name.
func identity() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns + "/quorate-operator"
	}
	host, _ := os.Hostname()
	return "local/" + host
}

// config is what the command line sets.
type config struct {
	metricsAddr, probeAddr, leaderNS, pullPolicy   string
	pprofAddr                                      string
	metricsSecret, metricsCASecret, metricsService string
	secureMetrics, leaderElect, version            bool
	concurrency                                    int
	apiQPS                                         float64
	apiBurst                                       int
	resync, rollSettle                             time.Duration
	consistencyInterval                            time.Duration
	deadlines                                      planner.Deadlines
	ownershipTerm, certLifetime, certPropagation   time.Duration
	minBackupInterval, minDefragInterval           time.Duration
	allowPlaintext                                 bool
	allowedStorage                                 string
	allowAmbientStorage                            bool
	storagePolicy                                  storagepolicy.Policy
	operator                                       resources.Operator
	images                                         resources.Images
	uidMode                                        string
	zap                                            zap.Options
}

func main() {
	cfg := parseFlags()
	if cfg.version {
		fmt.Println(buildinfo.String("quorate-operator"))
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&cfg.zap)))
	log := ctrl.Log.WithName("setup")
	if soft, why, err := memlimit.Set(memlimit.Paths); err != nil {
		log.Error(err, "reading the container's memory limit: the Go runtime keeps no soft memory limit; set GOMEMLIMIT to give it one")
	} else {
		log.Info("the Go runtime's soft memory limit", "bytes", soft, "because", why)
	}
	images := &cfg.images
	images.PullPolicy = corev1.PullPolicy(cfg.pullPolicy)
	images.EtcdPinned = resources.PinnedFromEnv(os.Environ())
	var proxyCredentials []string
	images.ProxyEnv, proxyCredentials = resources.ProxyEnvFrom(os.Environ())
	if len(proxyCredentials) > 0 {
		log.Error(nil, "proxy settings with a user and password in them are not given to backup and restore pods (their specs are readable in the clusters' namespaces); use a proxy that needs no password there, or one the pods' network reaches without", "variables", proxyCredentials)
	}
	var err error
	if cfg.storagePolicy, err = storagepolicy.Parse(cfg.allowedStorage, cfg.allowAmbientStorage); err != nil {
		log.Error(err, "the storage policy")
		os.Exit(2)
	}
	images.StoreEnvLocked = len(cfg.storagePolicy.Allowed) > 0
	if images.Launcher == "" {
		log.Error(nil, "no launcher image: set --launcher-image or OPERATOR_IMAGE to the operator's image")
		os.Exit(2)
	}
	if err := images.Policy.Check(images.Launcher); err != nil {
		log.Error(err, "the launcher image is outside the image policy: every member pod runs it")
		os.Exit(2)
	}

	restConfig := ctrl.GetConfigOrDie()
	restConfig.QPS, restConfig.Burst = float32(cfg.apiQPS), cfg.apiBurst
	metricsOpts, metricsCert := metricsServing(cfg, restConfig, log)
	mgr, err := newManager(cfg, restConfig, metricsOpts)
	exitOn(log, err, "creating the manager")
	id := identity()
	addControllers(mgr, cfg, id, log)
	if metricsCert != nil {
		exitOn(log, mgr.Add(metricsCert), "renewing the metrics certificate")
	}
	exitOn(log, addUpgradeGate(mgr, id), "setting up the OperatorCondition")
	exitOn(log, addChecks(mgr), "adding health and ready checks")
	log.Info("starting quorate-operator", "etcdImageRepository", images.EtcdRepository, "launcherImage", images.Launcher)
	exitOn(log, mgr.Start(ctrl.SetupSignalHandler()), "running the manager")
}

// exitOn logs err with msg and ends the process, when there is an error.
func exitOn(log logr.Logger, err error, msg string) {
	if err != nil {
		log.Error(err, msg)
		os.Exit(1)
	}
}

// parseFlags reads the command line (and the environment variables some flags default to).
func parseFlags() *config {
	cfg := &config{
		deadlines: planner.DefaultDeadlines,
		operator:  resources.Operator{Labels: resources.DefaultOperatorLabels()},
		zap:       zap.Options{Development: false},
	}
	flag.StringVar(&cfg.metricsAddr, "metrics-bind-address", ":8443", "address of the metrics endpoint (0 disables it)")
	flag.BoolVar(&cfg.secureMetrics, "metrics-secure", true, "serve metrics over HTTPS with authentication and authorization")
	flag.StringVar(&cfg.probeAddr, "health-probe-bind-address", ":8081", "address of the health probes")
	flag.StringVar(&cfg.pprofAddr, "pprof-bind-address", "", "address of Go's pprof endpoints (empty: off), for profiling memory and CPU")
	flag.BoolVar(&cfg.leaderElect, "leader-elect", true, "elect a leader so that only one replica acts")
	flag.StringVar(&cfg.leaderNS, "leader-election-namespace", "", "namespace of the leader election Lease (default: the operator's own)")
	flag.IntVar(&cfg.concurrency, "max-concurrent-reconciles", 4, "EtcdClusters reconciled in parallel")
	flag.Float64Var(&cfg.apiQPS, "kube-api-qps", 50, "requests per second the operator's Kubernetes client sends at most, sustained (client-go's token bucket; reads from the cache do not count)")
	flag.IntVar(&cfg.apiBurst, "kube-api-burst", 100, "requests the operator's Kubernetes client may send at once above --kube-api-qps")
	flag.DurationVar(&cfg.resync, "resync-period", 30*time.Second, "how often a settled cluster's health is checked")
	flag.DurationVar(&cfg.consistencyInterval, "consistency-check-interval", etcdcluster.DefaultConsistencyInterval, "how often the voters' data of each cluster are compared (etcd HashKV at one revision; a member whose data differ from the majority's is replaced); hashing reads each member's whole database; 0 turns it off")
	flag.DurationVar(&cfg.rollSettle, "roll-settle", 10*time.Second, "how long every member's pod must have been ready before a rolling update (etcd upgrade, spec change) replaces the next one; clients reconnect in that time")
	deadlines := &cfg.deadlines
	flag.DurationVar(&deadlines.MemberStart, "member-start-deadline", deadlines.MemberStart, "how long a member's new pod may take to become healthy before a rollout is reported stuck (sooner when the pod shows why, such as an image pull error); also how long a pod of an older spec that served and lost its leader is kept while the cluster has no quorum, before it is replaced with the current spec")
	flag.DurationVar(&deadlines.Learner, "learner-deadline", deadlines.Learner, "how long a learner may take to start and catch up before it is removed and added again")
	flag.DurationVar(&deadlines.Terminating, "terminating-deadline", deadlines.Terminating, "how long a member's pod may stay terminating (its node does not answer) before it is reported and no longer holds up other members' steps")
	defaultTerm, err := time.ParseDuration(envflag.Or("OWNERSHIP_TERM", "1m"))
	if err != nil {
		defaultTerm = time.Minute
	}
	flag.DurationVar(&cfg.ownershipTerm, "ownership-term", defaultTerm, "how long this instance's claim on a cluster lasts without renewal; another Quorate install that sees the cluster takes it over only after it expires (0 turns claims off: only for a single install)")
	flag.StringVar(&cfg.allowedStorage, "allowed-storage", envflag.Or("ALLOWED_STORAGE", ""), "the bucket URLs (comma-separated, each exactly as a storage's bucketURL names it, options in any order) backups may go to and restores come from; empty: any (every namespace user who may create an EtcdBackup can then export the whole keyspace anywhere the backup Job reaches) (env ALLOWED_STORAGE)")
	flag.BoolVar(&cfg.allowAmbientStorage, "allow-ambient-storage-identity", envflag.Or("ALLOW_AMBIENT_STORAGE_IDENTITY", "") == "true", "with --allowed-storage, let a storage that names neither credentialsSecret nor identity.serviceAccountName use its pods' ambient identity (env ALLOW_AMBIENT_STORAGE_IDENTITY=true)")
	flag.BoolVar(&cfg.allowPlaintext, "allow-plaintext", false, "manage EtcdClusters with tls.enabled false (anyone who reaches their members can read and write them); off: such clusters are refused with the condition InvalidSpec")
	flag.StringVar(&cfg.images.EtcdRepository, "etcd-image-repository", envflag.Or("ETCD_IMAGE_REPOSITORY", "gcr.io/etcd-development/etcd"), "repository of etcd images, tagged v<version> (env ETCD_IMAGE_REPOSITORY)")
	flag.StringVar(&cfg.images.Launcher, "launcher-image", envflag.Or("OPERATOR_IMAGE", ""), "image holding /quorate-launcher, normally the operator's own image (env OPERATOR_IMAGE)")
	// The environment's registries stand until the flag is given; each flag then adds its own.
	cfg.images.Policy.AllowedRegistries = envflag.List(os.Getenv("ALLOWED_IMAGE_REGISTRIES"))
	fromFlags := false
	flag.Func("allowed-image-registries", "comma-separated registry hosts or repository paths (registry.example.com,ghcr.io/quorate-dev/) the etcd images, spec.image included, and the launcher must come from; a cluster whose image is from elsewhere stops with Degraded=ImageNotAllowed (default: any) (env ALLOWED_IMAGE_REGISTRIES)", func(v string) error {
		if !fromFlags {
			cfg.images.Policy.AllowedRegistries, fromFlags = nil, true
		}
		cfg.images.Policy.AllowedRegistries = append(cfg.images.Policy.AllowedRegistries, envflag.List(v)...)
		return nil
	})
	requireDigests, err := envflag.Bool("REQUIRE_IMAGE_DIGESTS")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	flag.BoolVar(&cfg.images.Policy.RequireDigests, "require-image-digests", requireDigests, "run only images named by digest (@sha256:...), as disconnected installs need: a cluster whose etcd image (spec.image, or the version's) is named by tag stops with Degraded=ImageNotAllowed (env REQUIRE_IMAGE_DIGESTS=true)")
	flag.StringVar(&cfg.uidMode, "pod-security-context", envflag.Or("POD_SECURITY_CONTEXT", string(uidpolicy.Auto)), "who chooses the user and groups of member, backup and drill pods: fixed (they ask for 65532, which keeps a root-owned volume writable), platform (they ask for none: OpenShift's restricted-v2 SCC assigns them from the namespace's range and rejects others), auto (platform in namespaces with the openshift.io/sa.scc.uid-range annotation, fixed elsewhere and where the namespace cannot be read) (env POD_SECURITY_CONTEXT)")
	flag.StringVar(&cfg.pullPolicy, "image-pull-policy", envflag.Or("IMAGE_PULL_POLICY", string(corev1.PullIfNotPresent)), "pull policy of member images")
	flag.DurationVar(&cfg.certLifetime, "certificate-lifetime", pki.LeafValidity, "lifetime of the certificates the operator generates; each is renewed in its Secret with a third of it left")
	defaultPropagation, err := time.ParseDuration(envflag.Or("CERTIFICATE_PROPAGATION", "2m"))
	if err != nil {
		defaultPropagation = 2 * time.Minute
	}
	flag.DurationVar(&cfg.minDefragInterval, "min-defrag-interval", time.Hour, "the shortest time between two scheduled defragmentation rounds of a cluster (each blocks every member in turn); a spec.maintenance.defrag.schedule that runs more often runs at this pace, with a DefragScheduleLimited Warning Event")
	flag.DurationVar(&cfg.minBackupInterval, "min-backup-interval", backup.DefaultMinInterval, "the shortest time allowed between two runs of an EtcdBackupSchedule (each takes a whole snapshot); a schedule that runs more often is refused with InvalidSchedule")
	flag.DurationVar(&cfg.certPropagation, "certificate-propagation", defaultPropagation, "how long each phase of a CA rotation (spec.tls.rotateCA) lasts at least: the time the kubelet takes to project an updated Secret into the pods, applications' included (env CERTIFICATE_PROPAGATION)")
	flag.StringVar(&cfg.operator.Namespace, "operator-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the operator's pods, which the clusters' NetworkPolicies admit to the client port (env POD_NAMESPACE; empty: pods with the operator's labels in any namespace)")
	flag.StringVar(&cfg.metricsSecret, "metrics-cert-secret", "quorate-metrics-tls", "Secret of the operator's namespace holding the metrics endpoint's certificate and its CA's certificate (issued and renewed by the operator; a ServiceMonitor names its ca.crt); empty: a self-signed certificate")
	flag.StringVar(&cfg.metricsCASecret, "metrics-ca-secret", "quorate-metrics-ca", "Secret of the operator's namespace holding the key of the metrics certificate's CA, which only the operator reads (scrapers read --metrics-cert-secret)")
	flag.StringVar(&cfg.metricsService, "metrics-service", "quorate-controller-manager-metrics-service", "the metrics Service, whose DNS names the metrics certificate covers")
	flag.Var(labelsFlag(cfg.operator.Labels), "operator-pod-labels", "labels (k=v,...) of the operator's pods, which the clusters' NetworkPolicies admit to the client port")
	flag.BoolVar(&cfg.version, "version", false, "print the version, platform and Go release of this build and exit")
	cfg.zap.BindFlags(flag.CommandLine)
	flag.Parse()
	return cfg
}

// metricsServing is how the metrics endpoint serves. It serves a certificate its scrapers
// verify (ServiceMonitor tlsConfig.ca): issued for the metrics Service by the operator's own
// CA, kept in a Secret of its namespace (the Provider, nil without one, renews it).
func metricsServing(cfg *config, restConfig *rest.Config, log logr.Logger) (metricsserver.Options, *metricstls.Provider) {
	metricsOpts := metricsserver.Options{BindAddress: cfg.metricsAddr, SecureServing: cfg.secureMetrics,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}}
	if cfg.secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if !cfg.secureMetrics || cfg.metricsAddr == "0" || cfg.operator.Namespace == "" || cfg.metricsSecret == "" {
		return metricsOpts, nil
	}
	direct, err := client.New(restConfig, client.Options{Scheme: scheme})
	exitOn(log, err, "creating a client")
	metricsCert := &metricstls.Provider{Client: direct, Namespace: cfg.operator.Namespace, Secret: cfg.metricsSecret, CASecret: cfg.metricsCASecret, Service: cfg.metricsService}
	exitOn(log, metricsCert.Ensure(ctrl.LoggerInto(context.Background(), log), time.Now()), "the metrics certificate")
	metricsOpts.TLSOpts = append(metricsOpts.TLSOpts, metricsCert.TLSOpts)
	return metricsOpts, metricsCert
}

// newManager makes the manager: its cache, leader election, probes and Event broadcaster.
func newManager(cfg *config, restConfig *rest.Config, metricsOpts metricsserver.Options) (ctrl.Manager, error) {
	return ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        cfg.probeAddr,
		PprofBindAddress:              cfg.pprofAddr,
		LeaderElection:                cfg.leaderElect,
		LeaderElectionID:              "quorate.etcd.quorate.dev",
		LeaderElectionNamespace:       cfg.leaderNS,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cacheOptions(),
		// Every membership step, certificate change and phase of a rotation is an Event on the
		// EtcdCluster; client-go's default spam filter keeps 25 per object and then one every
		// five minutes, which a CA rotation or a long scale alone exceeds. The manager lives
		// as long as the process, so the broadcaster cannot leak. Its three caches (spam filter,
		// aggregation, counts of repeated Events) keep eventCacheEntries keys each, not
		// client-go's 4096.
		EventBroadcaster: record.NewBroadcasterWithCorrelatorOptions(record.CorrelatorOptions{BurstSize: 200, QPS: 0.2, LRUCacheSize: eventCacheEntries}), //nolint:staticcheck // SA1019: the only way to set the spam filter; see above
	})
}

// addControllers registers the EtcdCluster, EtcdBackup and EtcdBackupSchedule controllers.
func addControllers(mgr ctrl.Manager, cfg *config, id string, log logr.Logger) {
	mode, err := uidpolicy.ParseMode(cfg.uidMode)
	exitOn(log, err, "reading the flags")
	uids := &uidpolicy.Policy{Mode: mode, Reader: mgr.GetAPIReader()}
	r := &etcdcluster.Reconciler{
		UIDs:                uids,
		Client:              mgr.GetClient(),
		APIReader:           mgr.GetAPIReader(),
		Scheme:              mgr.GetScheme(),
		Recorder:            mgr.GetEventRecorderFor(id), //nolint:staticcheck // core/v1 events show in kubectl describe; the source names the install
		Images:              cfg.images,
		EtcdFactory:         etcdFactory(),
		Expectations:        expectations.New(2 * time.Minute),
		ResyncPeriod:        cfg.resync,
		Settings:            etcdcluster.Settings{RollSettle: cfg.rollSettle, Deadlines: cfg.deadlines, MinDefragInterval: cfg.minDefragInterval},
		Ownership:           &ownership.Ownership{Identity: id, Term: cfg.ownershipTerm},
		AllowPlaintext:      cfg.allowPlaintext,
		StoragePolicy:       cfg.storagePolicy,
		Operator:            cfg.operator,
		CertLifetime:        cfg.certLifetime,
		CertPropagation:     cfg.certPropagation,
		ConsistencyInterval: cfg.consistencyInterval,
	}
	exitOn(log, r.SetupWithManager(mgr, cfg.concurrency), "setting up the controller")
	// Backups, schedules and restore drills act on the clusters whose claim r holds.
	exitOn(log, (&backup.BackupReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
		Recorder: r.Recorder, Images: cfg.images, UIDs: uids, Ownership: r.Ownership, StoragePolicy: cfg.storagePolicy}).SetupWithManager(mgr), "setting up the backup controller")
	exitOn(log, (&backup.ScheduleReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
		Recorder: r.Recorder, Images: cfg.images, UIDs: uids, Ownership: r.Ownership, MinInterval: cfg.minBackupInterval, StoragePolicy: cfg.storagePolicy}).SetupWithManager(mgr), "setting up the backup schedule controller")
}

// cacheOptions restricts the cache to WATCH_NAMESPACE (comma-separated, as OLM sets it), or
// watches every namespace.
func cacheOptions() cache.Options {
	var namespaces []string
	if ns := strings.TrimSpace(os.Getenv("WATCH_NAMESPACE")); ns != "" {
		for _, n := range strings.Split(ns, ",") {
			namespaces = append(namespaces, strings.TrimSpace(n))
		}
		ctrl.Log.WithName("setup").Info("watching namespaces", "namespaces", ns)
	}
	return managercache.Options(namespaces...)
}

// addChecks: healthy while the process runs; ready once the cache has synced (before that,
// every pass would act on an empty view).
func addChecks(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("cache-synced", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("the cache has not synced yet")
		}
		return nil
	})
}

// addUpgradeGate makes the operator hold OLM upgrades while its clusters change, through the
// OperatorCondition OLM names in OPERATOR_CONDITION_NAME. Outside OLM there is none.
func addUpgradeGate(mgr ctrl.Manager, id string) error {
	log := ctrl.Log.WithName("setup")
	if os.Getenv("OPERATOR_CONDITION_NAME") == "" {
		log.Info("not installed by OLM (OPERATOR_CONDITION_NAME is unset): no Upgradeable condition to keep")
		return nil
	}
	s := runtime.NewScheme()
	if err := operatorsv2.AddToScheme(s); err != nil {
		return err
	}
	// Uncached: the OperatorCondition lives in the operator's namespace, which the cache may
	// not watch.
	cl, err := client.New(mgr.GetConfig(), client.Options{Scheme: s})
	if err != nil {
		return err
	}
	cond, err := conditions.InClusterFactory{Client: cl}.NewCondition(operatorsv2.ConditionType(operatorsv2.Upgradeable))
	if err != nil {
		return err
	}
	return mgr.Add(&upgradegate.Gate{Reader: mgr.GetClient(), Condition: cond, Identity: id, Interval: 5 * time.Second})
}

// labelsFlag parses k=v,... into the map it wraps, replacing its defaults.
type labelsFlag map[string]string

func (l labelsFlag) String() string {
	return labels.FormatLabels(l)
}

func (l labelsFlag) Set(v string) error {
	m, err := labels.ConvertSelectorToLabelsMap(v)
	if err != nil {
		return fmt.Errorf("labels must be k=v,...: %w", err)
	}
	if len(m) == 0 {
		return fmt.Errorf("at least one label is needed to select the operator's pods")
	}
	clear(l)
	for k, val := range m {
		l[k] = val
	}
	return nil
}
