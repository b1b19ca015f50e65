// Package names derives every name the operator gives to the objects of an EtcdCluster and to
// its etcd members. Names are deterministic so that a retried or repeated step addresses the
// same object, and so that a member's Pod, PVC, DNS name and etcd member name always agree.
package names

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	// Prefix of every label and annotation the operator owns.
	Prefix = "etcd.quorate.dev/"

	// LabelCluster marks every object of a cluster with the cluster's name.
	LabelCluster = Prefix + "cluster"
	// LabelUser marks the Secret of an application user (spec.users) with the user's name.
	LabelUser = Prefix + "user"
	// LabelBackup marks an EtcdBackup's Job and pod with the backup's name, and a schedule's
	// archiver pod with its Deployment's: the pods that may reach the members' client port
	// under a NetworkPolicy that names its clients.
	LabelBackup = Prefix + "backup"
	// LabelArchive marks a schedule's archiver Deployment and pod with the schedule's name.
	LabelArchive = Prefix + "archive"
	// LabelSchedule marks the EtcdBackups of an EtcdBackupSchedule with its name.
	LabelSchedule = Prefix + "schedule"
	// LabelMember marks a member's Pod and PVC with the member name.
	LabelMember = Prefix + "member"
	// LabelComponent tells member objects from the cluster's shared objects.
	LabelComponent = Prefix + "component"
	// LabelManagedBy is the recommended app.kubernetes.io label.
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// AnnotationSpecHash is the hash of the member spec a Pod was built from.
	AnnotationSpecHash = Prefix + "spec-hash"
	// AnnotationClusterID on a member PVC records the etcd cluster its data belongs to. It
	// survives the loss of the EtcdCluster's status and forbids bootstrapping again.
	AnnotationClusterID = Prefix + "cluster-id"
	// AnnotationObjectHash is the hash of a Service, PDB or Secret's desired content.
	AnnotationObjectHash = Prefix + "object-hash"
	// AnnotationOwnerUID on a member PVC names the EtcdCluster (by UID) it belongs to, with or
	// without an owner reference (spec.volumeRetention).
	AnnotationOwnerUID = Prefix + "owner-uid"
	// AnnotationRequireData on a member Pod says the member has run: its launcher refuses to
	// start etcd on an empty data directory from then on, whatever its flags say. The
	// launcher reads it through the downward API at every start of the container.
	AnnotationRequireData = Prefix + "require-data"
	// AnnotationFenced on a member PVC names the forced recovery (its spec.recovery.forceNewCluster
	// token) that fenced the member before another member was forced to lead alone: the
	// forced member's cluster no longer counts it, so its data, which may be a quorum of the
	// old membership, never runs again. The operator gives such a volume no pod, and deletes it
	// once the recovered cluster answers.
	AnnotationFenced = Prefix + "fenced-by-recovery"
	// AnnotationFenceMembers on an EtcdCluster is the user's request to fence members: a
	// comma-separated list of member names whose etcd is stopped while their pods stay (for
	// investigation). It is not a removal: the members stay voters, and the operator refuses a
	// fence that would leave fewer healthy, unfenced voters than a quorum. Removing a name
	// unfences the member. Not to be confused with AnnotationFenced (a forced recovery's).
	AnnotationFenceMembers = Prefix + "fence-members"
	// AnnotationStopEtcd on a member Pod ("true") tells its launcher, through the downward
	// API, to stop etcd (after handing leadership over) and to stay alive without it, answering
	// the pod's probes itself (alive, not ready), until the annotation goes away: the operator
	// sets it for a member named in AnnotationFenceMembers.
	AnnotationStopEtcd = Prefix + "stop-etcd"
	// AnnotationRecoveredBy on the survivor's PVC names the forced recovery (token) that
	// restarted it alone: with the fenced volumes' marks, it keeps a token from being acted on
	// again when the EtcdCluster's status is lost (recreated, or restored by a backup tool).
	AnnotationRecoveredBy = Prefix + "recovered-by"
	// AnnotationPodUser on a member PVC records who chose the user its pods run as when it was
	// created (resources.UIDChoice: fixed, or platform); every later pod of the volume runs the
	// same way, so the files its first pod wrote stay readable. A PVC without it was made by a
	// release that always ran pods as 65532 (fixed).
	AnnotationPodUser = Prefix + "pod-user"
	// LabelRetention on a member PVC is spec.volumeRetention when the PVC was last reconciled.
	LabelRetention = Prefix + "retention"
	// LabelServing on a member Pod says whether the client Service sends it clients: "true"
	// from its creation, "false" while the operator takes it out of the Service before it
	// stops it (a roll, a leadership move before one). The client Service selects "true".
	LabelServing = Prefix + "serving"
	// AnnotationUnpublishedAt on a member Pod is when the operator set LabelServing to "false"
	// (RFC 3339).
	AnnotationUnpublishedAt = Prefix + "unpublished-at"
	// AnnotationStoreSecrets on an archiver's pod template is a hash, keyed with the Secret's
	// UID, of what the archiver reads of each Secret of its storage (the credentials' data,
	// the CA bundle's key), as <name>=<hash>, when the operator applied it: the archiver reads
	// them once, when it starts (the credentials as environment variables), so a change of
	// what it reads rolls the archiver.
	AnnotationStoreSecrets = Prefix + "store-secrets"
	// AnnotationStoreSecretVersions on an archiver's Deployment is the resourceVersion each
	// of those Secrets had when its data was hashed, as <name>=<version>: a Secret still at
	// that version is not read again.
	AnnotationStoreSecretVersions = Prefix + "store-secret-versions"

	// ComponentMember is the component label value of member Pods and PVCs.
	ComponentMember = "member"
	// ManagedBy is the value of the managed-by label.
	ManagedBy = "quorate"

	// ClientPort, PeerPort and MetricsPort are the ports every member listens on;
	// ClientHTTPPort serves the client HTTP endpoints (JSON gateway, /health, /version) on
	// releases that split them from gRPC (version.SplitsClientHTTP).
	ClientPort     = 2379
	PeerPort       = 2380
	MetricsPort    = 2381
	ClientHTTPPort = 2382
)

// Member returns the name of the member with the given index: "<cluster>-<index>".
func Member(cluster string, index int) string { return cluster + "-" + strconv.Itoa(index) }

// MemberIndex parses the index out of a member name of the cluster; ok is false for names that
// are not member names of this cluster.
func MemberIndex(cluster, member string) (int, bool) {
	rest, found := strings.CutPrefix(member, cluster+"-")
	if !found || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 {
		return 0, false
	}
	return i, true
}

// PeerService is the headless Service that gives every member a DNS name.
func PeerService(cluster string) string { return cluster + "-peer" }

// ClientService is the Service clients connect to.
func ClientService(cluster string) string { return cluster + "-client" }

// OwnerLease is the Lease through which one operator instance claims the cluster.
func OwnerLease(cluster string) string { return cluster + "-operator" }

// OperatorContainer is the container that runs quorate-operator in the operator's pods
// (config/manager/manager.yaml, and the CSV's deployment made from it).
const OperatorContainer = "manager"

// OperatorLabels select the operator's pods (config/manager/manager.yaml's pod template):
// Quorate's own name together with kubebuilder's control-plane label. The control-plane label
// alone is carried by every kubebuilder operator, and OLM puts AllNamespaces operators in one
// shared namespace. A new map each call.
func OperatorLabels() map[string]string {
	return map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "quorate"}
}

// PDB is the PodDisruptionBudget of the members.
func PDB(cluster string) string { return cluster }

// CASecrets are the names of a cluster's two CA Secrets: the cluster CA's and the peer CA's.
type CASecrets struct{ Cluster, Peer string }

// CASecretsOf are the CA Secrets of a cluster made by this operator: "<cluster>.ca" and
// "<cluster>.peer-ca". A cluster name has no '.' (CEL), and no other Secret the operator names
// has one, so the part before the dot names the cluster and no two clusters' CA Secrets can
// share a name.
func CASecretsOf(cluster string) CASecrets {
	return CASecrets{Cluster: cluster + ".ca", Peer: cluster + ".peer-ca"}
}

// LegacyCASecretsOf are the CA Secrets of clusters made before CASecretsOf: "<cluster>-ca" and
// "<cluster>-peer-ca", where cluster foo's peer CA and cluster foo-peer's CA share a name.
// Clusters that have them keep them (certificates.Manager decides which a cluster uses).
func LegacyCASecretsOf(cluster string) CASecrets {
	return CASecrets{Cluster: cluster + "-ca", Peer: cluster + "-peer-ca"}
}

// Secret names of the operator-generated leaf certificates.
func OperatorSecret(cluster string) string {
	return cluster + "-operator-tls"
}
func ServerSecret(cluster string) string { return cluster + "-server-tls" }

// Common names of the certificates the operator issues. The operator's own and the members'
// server certificate are etcd's admins when authentication is on (spec.users); the CRD's CEL
// rule on spec.users[].name refuses OperatorCN and ClientCN (covered by the validation test).
const (
	// OperatorCN is the operator's own client identity.
	OperatorCN = "quorate-operator"
	// ClientCN is the identity of the shared application client certificate.
	ClientCN = "quorate-client"
)

// ServerCN is the common name of a cluster's server certificate (members use it as clients
// too, to hand leadership over).
func ServerCN(cluster string) string { return cluster + "-server" }

// PeerCN is the common name of a cluster's peer certificate.
func PeerCN(cluster string) string { return cluster + "-peer" }

// UserSecret holds the client certificate of an application user (spec.users).
func UserSecret(cluster, user string) string { return cluster + "-user-" + user }
func PeerSecret(cluster string) string       { return cluster + "-peer-tls" }
func ClientSecret(cluster string) string     { return cluster + "-client-tls" }

// MemberHost is the DNS name of a member inside the cluster, through the peer Service.
// The short ".svc" form resolves with every cluster domain through the pod's search path.
func MemberHost(cluster, namespace, member string) string {
	return fmt.Sprintf("%s.%s.%s.svc", member, PeerService(cluster), namespace)
}

// ClientHost is the DNS name of the client Service.
func ClientHost(cluster, namespace string) string {
	return fmt.Sprintf("%s.%s.svc", ClientService(cluster), namespace)
}

func scheme(tls bool) string {
	if tls {
		return "https"
	}
	return "http"
}

// PeerURL is the peer URL a member advertises and is registered with in etcd.
func PeerURL(cluster, namespace, member string, tls bool) string {
	return fmt.Sprintf("%s://%s:%d", scheme(tls), MemberHost(cluster, namespace, member), PeerPort)
}

// ClientURL is the client URL a member advertises.
func ClientURL(cluster, namespace, member string, tls bool) string {
	return fmt.Sprintf("%s://%s:%d", scheme(tls), MemberHost(cluster, namespace, member), ClientPort)
}

// MemberFromPeerURL returns the member name encoded in a peer URL of this cluster.
func MemberFromPeerURL(cluster, namespace, peerURL string) (string, bool) {
	host := peerURL
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	host, _, _ = strings.Cut(host, ":")
	member, rest, found := strings.Cut(host, ".")
	if !found || rest != PeerService(cluster)+"."+namespace+".svc" {
		return "", false
	}
	if _, ok := MemberIndex(cluster, member); !ok {
		return "", false
	}
	return member, true
}

// ClusterLabels selects every object of a cluster.
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{LabelCluster: cluster, LabelManagedBy: ManagedBy}
}

// NetworkPolicy is the name of the cluster's NetworkPolicy.
func NetworkPolicy(cluster string) string { return cluster }

// MemberSelector selects the member pods of a cluster.
func MemberSelector(cluster string) map[string]string {
	return map[string]string{LabelCluster: cluster, LabelComponent: ComponentMember}
}

// ServingSelector selects the member pods of a cluster that the client Service sends clients.
func ServingSelector(cluster string) map[string]string {
	l := MemberSelector(cluster)
	l[LabelServing] = "true"
	return l
}

// MemberLabels are the labels of one member's Pod and PVC.
func MemberLabels(cluster, member string) map[string]string {
	l := ClusterLabels(cluster)
	l[LabelComponent] = ComponentMember
	l[LabelMember] = member
	return l
}

// FormatID renders an etcd member or cluster ID the way etcdctl does (hex).
func FormatID(id uint64) string { return strconv.FormatUint(id, 16) }

// ParseID parses a hex ID written by FormatID.
func ParseID(s string) (uint64, error) { return strconv.ParseUint(s, 16, 64) }
