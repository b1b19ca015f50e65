package etcdcluster

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func clusterObject(t *testing.T, ns, name, spec string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	doc := "apiVersion: etcd.quorate.dev/v1alpha1\nkind: EtcdCluster\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\nspec:\n" + indent(spec)
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("bad test YAML: %v\n%s", err, doc)
	}
	return obj
}

func indent(s string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// causes renders the field errors of an Invalid response as "field: message" lines.
func causes(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return []string{"not a field error: " + err.Error()}
	}
	var out []string
	for _, c := range status.Status().Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}

const (
	msgReplicas  = "replicas must be between 1 and 9; use 3 or 5 for a cluster that survives member loss"
	msgVersion   = "version must be an etcd release written as 3.5.N or 3.6.N (for example 3.6.16), without a leading v; other minor versions are not supported"
	msgImage     = "image must be an image reference such as registry.example.com/etcd:v3.6.16, or omitted to use the operator's image for the version"
	msgSize      = "storage.size must be at least 64Mi; etcd needs room for its write-ahead log and snapshots"
	msgTLSSet    = "tls.serverSecretName, tls.peerSecretName and tls.clientSecretName must be set together, or all left empty for operator-generated certificates"
	msgTLSOff    = "tls secret names cannot be set when tls.enabled is false; remove them or enable TLS"
	msgHeartbeat = "etcd.heartbeatIntervalMillis must be between 10 and 5000"
	msgElection  = "etcd.electionTimeoutMillis must be between 50 and 50000 (etcd's limit)"
	msgRatio     = "etcd.electionTimeoutMillis must be at least 5 times etcd.heartbeatIntervalMillis (etcd refuses to start otherwise); raise the election timeout or lower the heartbeat interval"
	msgQuota     = "etcd.quotaBackendBytes must be between 16Mi (16777216) and 8Gi (8589934592), the largest size etcd recommends"
	msgRetention = "etcd.autoCompactionRetention must be a number of revisions such as 10000 when autoCompactionMode is revision, or a duration such as 1h or 30m (or a number of hours) when it is periodic"
	msgLabels    = "podTemplate.labels cannot use the etcd.quorate.dev/ prefix, which the operator reserves for its own labels"
	msgAnnots    = "podTemplate.annotations cannot use the etcd.quorate.dev/ prefix, which the operator reserves for its own annotations"
	msgNameLen   = "metadata.name must be at most 40 characters: it prefixes the names of the member pods, services and secrets"
	msgNameChars = "metadata.name must start with a letter and contain only lowercase letters, digits and '-': it names Services, which need a DNS-1035 label"
	msgShrink    = "storage.size cannot shrink: etcd's files may already fill the volume, and volumes do not shrink; to use smaller volumes, restore a backup into a new EtcdCluster"
	// The API server adds this when schema errors stop CEL rules from running.
	msgNotChecked   = "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
	msgJoinTLS      = "spec.bootstrap.join needs certificates the external members trust: set tls.serverSecretName, tls.peerSecretName and tls.clientSecretName to Secrets issued by the external cluster's CA (tls.clientSecretName is also the operator's credential for the external cluster), or set tls.enabled to false for a plaintext cluster"
	msgQuotaFit     = "etcd.quotaBackendBytes plus 128Mi for etcd's write-ahead log must fit in storage.size: etcd refuses writes (NOSPACE) only at the quota, and a volume that fills first leaves every member crash-looping on a full disk. Lower the quota, raise storage.size, or leave the quota out to have it follow the volume"
	msgRestoreAdopt = "bootstrap.fromBackup and adoptRetainedVolumes exclude each other: adopted volumes keep their data and the backup would never be restored; to restore the backup, delete the retained PVCs and leave adoptRetainedVolumes out, or to restart from the volumes, leave bootstrap out"
	msgJoinScheme   = "spec.bootstrap.join.endpoints must use https:// with TLS on and http:// with tls.enabled false"
	msgBootstrap    = "spec.bootstrap cannot change after the cluster is created: it says what the cluster started from (only the settings of bootstrap.join may change)"
	joinPlain       = "bootstrap: {join: {endpoints: [\"http://10.0.0.5:2379\"]}}"
	msgTLSChange    = "tls.enabled and the tls secret names cannot be changed after creation (renewCertificates and rotateCA can); create a new EtcdCluster with the TLS settings you want and move your data to it"
	msgTLSRotate    = "tls.rotateCA and tls.renewCertificates act on the certificates the operator generates: with your own Secrets, replace their certificates yourself"
	msgUsersTLS     = `spec.users needs TLS with operator-generated certificates: users authenticate with client certificates the operator issues from the cluster CA`
	msgImageTag     = "the tag of spec.image names another etcd release than spec.version; set both to the same release"
	msgToken        = "recovery.forceNewCluster must be a token of letters, digits, '-', '_' and '.', such as incident-2026-11-23"
	msgLabelValue   = "label values must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	msgRequests     = "podTemplate.resources: the cpu and memory requests must be at most their limits"
	msgUserCN       = "spec.users cannot name <cluster>-server or <cluster>-peer: they are the common names of the cluster's own server and peer certificates, and the server's is an etcd administrator; choose another user name"
)

const base = "version: 3.6.16\nstorage: {size: 1Gi}\n"

func manyLabels(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = "l" + strconv.Itoa(i) + ": v"
	}
	return strings.Join(parts, ", ")
}

// TestValidationRejectsBadInput creates EtcdClusters with bad specs and asserts the exact
// field errors the API server returns: every rejection says what to do.
func TestValidationRejectsBadInput(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, spec, objName string
		want                []string
	}{
		{name: "replicas zero", spec: "replicas: 0\n" + base,
			want: []string{"spec.replicas: Invalid value: 0: " + msgReplicas}},
		{name: "replicas ten", spec: "replicas: 10\n" + base,
			want: []string{"spec.replicas: Invalid value: 10: " + msgReplicas}},
		{name: "version 3.4", spec: "version: 3.4.30\nstorage: {size: 1Gi}",
			want: []string{`spec.version: Invalid value: "3.4.30": ` + msgVersion}},
		{name: "version 3.7", spec: "version: 3.7.0\nstorage: {size: 1Gi}",
			want: []string{`spec.version: Invalid value: "3.7.0": ` + msgVersion}},
		{name: "version with v", spec: "version: v3.6.16\nstorage: {size: 1Gi}",
			want: []string{`spec.version: Invalid value: "v3.6.16": ` + msgVersion}},
		{name: "version not a release", spec: "version: latest\nstorage: {size: 1Gi}",
			want: []string{`spec.version: Invalid value: "latest": ` + msgVersion}},
		{name: "empty image", spec: base + "image: \"\"",
			want: []string{`spec.image: Invalid value: "": ` + msgImage}},
		{name: "image with a space", spec: base + "image: etcd latest",
			want: []string{`spec.image: Invalid value: "etcd latest": ` + msgImage}},
		{name: "tiny volume", spec: "version: 3.6.16\nstorage: {size: 10Mi}",
			want: []string{`spec.storage.size: Invalid value: "10Mi": ` + msgSize}},
		{name: "storage missing", spec: "version: 3.6.16",
			want: []string{`spec.storage: Required value`, msgNotChecked}},
		{name: "partial TLS secrets", spec: base + "tls: {serverSecretName: s}",
			want: []string{`spec.tls: Invalid value: ` + msgTLSSet}},
		{name: "TLS secrets with TLS off", spec: base + "tls: {enabled: false, serverSecretName: s, peerSecretName: p, clientSecretName: c}",
			want: []string{`spec.tls: Invalid value: ` + msgTLSOff}},
		{name: "CA rotation of supplied certificates", spec: base + "tls: {serverSecretName: s, peerSecretName: p, clientSecretName: c, rotateCA: r1}",
			want: []string{`spec.tls: Invalid value: ` + msgTLSRotate}},
		{name: "renewal without TLS", spec: base + "tls: {enabled: false, renewCertificates: r1}",
			want: []string{`spec.tls: Invalid value: ` + msgTLSRotate}},
		{name: "rotation token not a token", spec: base + "tls: {rotateCA: \"a b\"}",
			want: []string{`spec.tls.rotateCA: Invalid value: "a b": tls.rotateCA must be a token of letters, digits, '-', '_' and '.', such as ca-2026`}},
		{name: "defragNow not a token", spec: base + "maintenance: {defragNow: \"now please\"}",
			want: []string{`spec.maintenance.defragNow: Invalid value: "now please": maintenance.defragNow must be a token of letters, digits, '-', '_' and '.', such as defrag-2026-11-28`}},
		{name: "moveLeader token not a token", spec: base + "maintenance: {moveLeader: {token: \"-m\"}}",
			want: []string{`spec.maintenance.moveLeader.token: Invalid value: "-m": maintenance.moveLeader.token must be a token of letters, digits, '-', '_' and '.', such as move-2026-11-28`}},
		{name: "moveLeader to no member name", spec: base + "maintenance: {moveLeader: {token: m1, to: Demo_2}}",
			want: []string{`spec.maintenance.moveLeader.to: Invalid value: "Demo_2": maintenance.moveLeader.to must be a member name, such as demo-2`}},
		{name: "moveLeader without a token", spec: base + "maintenance: {moveLeader: {to: demo-2}}",
			want: []string{`spec.maintenance.moveLeader.token: Required value`, msgNotChecked}},
		{name: "heartbeat too short", spec: base + "etcd: {heartbeatIntervalMillis: 5}",
			want: []string{"spec.etcd.heartbeatIntervalMillis: Invalid value: 5: " + msgHeartbeat}},
		{name: "election timeout too long", spec: base + "etcd: {electionTimeoutMillis: 60000}",
			want: []string{"spec.etcd.electionTimeoutMillis: Invalid value: 60000: " + msgElection}},
		{name: "election timeout under five heartbeats", spec: base + "etcd: {heartbeatIntervalMillis: 300, electionTimeoutMillis: 1000}",
			want: []string{`spec.etcd: Invalid value: ` + msgRatio}},
		{name: "quota too small", spec: base + "etcd: {quotaBackendBytes: 1024}",
			want: []string{"spec.etcd.quotaBackendBytes: Invalid value: 1024: " + msgQuota}},
		{name: "quota too large", spec: "version: 3.6.16\nstorage: {size: 32Gi}\netcd: {quotaBackendBytes: 17179869184}",
			want: []string{"spec.etcd.quotaBackendBytes: Invalid value: 17179869184: " + msgQuota}},
		{name: "unknown compaction mode", spec: base + "etcd: {autoCompactionMode: hourly}",
			want: []string{`spec.etcd.autoCompactionMode: Unsupported value: "hourly": supported values: "periodic", "revision"`, msgNotChecked}},
		{name: "periodic retention not a duration", spec: base + "etcd: {autoCompactionRetention: one hour}",
			want: []string{`spec.etcd: Invalid value: ` + msgRetention}},
		{name: "revision retention not a count", spec: base + "etcd: {autoCompactionMode: revision, autoCompactionRetention: 1h}",
			want: []string{`spec.etcd: Invalid value: ` + msgRetention}},
		{name: "reserved pod label", spec: base + "podTemplate: {labels: {etcd.quorate.dev/member: x}}",
			want: []string{`spec.podTemplate.labels: Invalid value: ` + msgLabels}},
		{name: "reserved pod annotation", spec: base + "podTemplate: {annotations: {etcd.quorate.dev/spec-hash: x}}",
			want: []string{`spec.podTemplate.annotations: Invalid value: ` + msgAnnots}},
		{name: "name too long", objName: strings.Repeat("a", 41), spec: base,
			want: []string{`<nil>: Invalid value: ` + msgNameLen}},
		{name: "name starts with a digit", objName: "1etcd", spec: base,
			want: []string{`<nil>: Invalid value: ` + msgNameChars}},
		{name: "negative replicas", spec: "replicas: -1\n" + base,
			want: []string{".spec.replicas: Invalid value: -1: should be a non-negative integer", "spec.replicas: Invalid value: -1: " + msgReplicas}},
		{name: "image tag of another release", spec: base + "image: registry.example.com/etcd:v3.6.15",
			want: []string{"spec: Invalid value: " + msgImageTag}},
		{name: "image tag of another release without v", spec: base + "image: registry.example.com/etcd:3.5.35",
			want: []string{"spec: Invalid value: " + msgImageTag}},
		{name: "unknown volume retention", spec: base + "volumeRetention: Keep",
			want: []string{`spec.volumeRetention: Unsupported value: "Keep": supported values: "Retain", "Delete"`, msgNotChecked}},
		{name: "recovery token with spaces", spec: base + "recovery: {forceNewCluster: \"the incident\"}",
			want: []string{`spec.recovery.forceNewCluster: Invalid value: "the incident": ` + msgToken}},
		{name: "recovery token too long", spec: base + "recovery: {forceNewCluster: " + strings.Repeat("a", 64) + "}",
			want: []string{"spec.recovery.forceNewCluster: Too long: may not be more than 63 bytes", msgNotChecked}},
		{name: "pod label value with a space", spec: base + "podTemplate: {labels: {team: \"storage team\"}}",
			want: []string{`spec.podTemplate.labels[team]: Invalid value: "storage team": ` + msgLabelValue}},
		{name: "pod label value too long", spec: base + "podTemplate: {labels: {team: " + strings.Repeat("a", 64) + "}}",
			want: []string{"spec.podTemplate.labels.team: Too long: may not be more than 63 bytes", msgNotChecked}},
		{name: "node selector value not a label value", spec: base + "podTemplate: {nodeSelector: {zone: \"-a\"}}",
			want: []string{`spec.podTemplate.nodeSelector[zone]: Invalid value: "-a": ` + msgLabelValue}},
		{name: "cpu request over its limit", spec: base + "podTemplate: {resources: {requests: {cpu: \"2\"}, limits: {cpu: 500m}}}",
			want: []string{"spec.podTemplate.resources: Invalid value: " + msgRequests}},
		{name: "memory request over its limit", spec: base + "podTemplate: {resources: {requests: {memory: 2Gi}, limits: {memory: 1Gi}}}",
			want: []string{"spec.podTemplate.resources: Invalid value: " + msgRequests}},
		{name: "priority class not a name", spec: base + "podTemplate: {priorityClassName: High_Priority}",
			want: []string{`spec.podTemplate.priorityClassName: Invalid value: "High_Priority": podTemplate.priorityClassName must be a PriorityClass name: lowercase letters, digits, '-' and '.'`}},
		{name: "storage class not a name", spec: "version: 3.6.16\nstorage: {size: 1Gi, storageClassName: Fast_SSD}",
			want: []string{`spec.storage.storageClassName: Invalid value: "Fast_SSD": storage.storageClassName must be a StorageClass name: lowercase letters, digits, '-' and '.'`}},
		{name: "TLS secret not a name", spec: base + "tls: {serverSecretName: My_Secret, peerSecretName: p, clientSecretName: c}",
			want: []string{`spec.tls.serverSecretName: Invalid value: "My_Secret": tls secret names must be Secret names: lowercase letters, digits, '-' and '.'`}},
		{name: "compaction retention too long", spec: base + "etcd: {autoCompactionRetention: \"" + strings.Repeat("1", 33) + "\"}",
			want: []string{"spec.etcd.autoCompactionRetention: Too long: may not be more than 32 bytes", msgNotChecked}},
		{name: "heartbeat and election at the limit but too close", spec: base + "etcd: {heartbeatIntervalMillis: 5000, electionTimeoutMillis: 20000}",
			want: []string{`spec.etcd: Invalid value: ` + msgRatio}},
		{name: "recovery token starting with a dash", spec: base + "recovery: {forceNewCluster: -x}",
			want: []string{`spec.recovery.forceNewCluster: Invalid value: "-x": ` + msgToken}},
		{name: "too many pod labels", spec: base + "podTemplate: {labels: {" + manyLabels(65) + "}}",
			want: []string{"spec.podTemplate.labels: Too many: 65: must have at most 64 items", msgNotChecked}},
		{name: "too many network policy clients", spec: base + "networkPolicy: {clients: [" + strings.TrimSuffix(strings.Repeat("{podSelector: {}}, ", 33), ", ") + "]}",
			want: []string{"spec.networkPolicy.clients: Too many: 33: must have at most 32 items", msgNotChecked}},
		{name: "user named root", spec: base + "users: [{name: root, readWrite: [/]}]",
			want: []string{`spec.users[0].name: Invalid value: "root": root, quorate-operator and quorate-client are the operator's own identities; choose another user name`}},
		{name: "user named as the server certificate", spec: base + "users: [{name: app}, {name: bad-server, readOnly: [/]}]",
			want: []string{"<nil>: Invalid value: " + msgUserCN}},
		{name: "user named as the peer certificate", spec: base + "users: [{name: bad-peer}]",
			want: []string{"<nil>: Invalid value: " + msgUserCN}},
		{name: "users without TLS", spec: base + "tls: {enabled: false}\nusers: [{name: app, readWrite: [/app/]}]",
			want: []string{"spec: Invalid value: " + msgUsersTLS}},
		{name: "users with supplied certificates", spec: base + "tls: {serverSecretName: s, peerSecretName: p, clientSecretName: c}\nusers: [{name: app}]",
			want: []string{"spec: Invalid value: " + msgUsersTLS}},
		{name: "user with an empty prefix", spec: base + "users: [{name: app, readOnly: [\"\"]}]",
			want: []string{`spec.users[0].readOnly[0]: Invalid value: "": spec.users[0].readOnly[0] in body should be at least 1 chars long`}},
		{name: "join with generated certificates", spec: base + "bootstrap: {join: {endpoints: [\"https://10.0.0.5:2379\"]}}",
			want: []string{"spec: Invalid value: " + msgJoinTLS}},
		{name: "join over http with TLS on", spec: base + "tls: {serverSecretName: s, peerSecretName: p, clientSecretName: c}\nbootstrap: {join: {endpoints: [\"http://10.0.0.5:2379\"]}}",
			want: []string{"spec: Invalid value: " + msgJoinScheme}},
		{name: "join endpoint without a port", spec: base + "tls: {enabled: false}\nbootstrap: {join: {endpoints: [\"http://10.0.0.5\"]}}",
			want: []string{`spec.bootstrap.join.endpoints[0]: Invalid value: "http://10.0.0.5": spec.bootstrap.join.endpoints[0] in body should match '^https?://[^/\s]+:[0-9]+/?$'`}},
		{name: "join and restore", spec: base + "tls: {enabled: false}\nbootstrap: {fromBackup: {backupName: b}, join: {endpoints: [\"http://10.0.0.5:2379\"]}}",
			want: []string{"spec.bootstrap: Invalid value: bootstrap takes fromBackup or join, not both: a joined cluster keeps the external cluster's data"}},
		{name: "a quota the volume cannot hold", spec: base + "etcd: {quotaBackendBytes: 2147483648}",
			want: []string{"spec: Invalid value: " + msgQuotaFit}},
		{name: "a quota that leaves no room for the log", spec: "version: 3.6.16\nstorage: {size: 256Mi}\netcd: {quotaBackendBytes: 134217729}",
			want: []string{"spec: Invalid value: " + msgQuotaFit}},
		{name: "restore onto adopted volumes", spec: base + "adoptRetainedVolumes: true\nbootstrap: {fromBackup: {backupName: b}}",
			want: []string{"spec: Invalid value: " + msgRestoreAdopt}},
		{name: "uppercase name", objName: "Etcd", spec: base,
			want: []string{`metadata.name: Invalid value: "Etcd": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`, `<nil>: Invalid value: ` + msgNameChars}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.objName
			if name == "" {
				name = "bad"
			}
			err := k8s.Create(ctx, clusterObject(t, ns, name, tc.spec))
			if err == nil {
				t.Fatal("the API server accepted the bad input")
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error is not Invalid: %v", err)
			}
			if got := causes(err); !slices.Equal(got, tc.want) {
				t.Errorf("rejection\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}

// TestValidationKeepsImmutableFields updates a valid EtcdCluster in ways that cannot be
// applied to a running cluster, and asserts each is rejected with its message.
func TestValidationKeepsImmutableFields(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, spec, update string
		want               []string
	}{
		{name: "shrink storage", spec: base, update: "version: 3.6.16\nstorage: {size: 512Mi}",
			want: []string{`spec.storage.size: Invalid value: "512Mi": ` + msgShrink}},
		{name: "turn TLS off", spec: base, update: base + "tls: {enabled: false}",
			want: []string{`spec.tls: Invalid value: ` + msgTLSChange}},
		{name: "bring own certificates later", spec: base, update: base + "tls: {serverSecretName: s, peerSecretName: p, clientSecretName: c}",
			want: []string{`spec.tls: Invalid value: ` + msgTLSChange}},
		{name: "join later", spec: base + "tls: {enabled: false}", update: base + "tls: {enabled: false}\n" + joinPlain,
			want: []string{`spec: Invalid value: ` + msgBootstrap}},
		{name: "drop the join", spec: base + "tls: {enabled: false}\n" + joinPlain, update: base + "tls: {enabled: false}\nbootstrap: {}",
			want: []string{`spec: Invalid value: ` + msgBootstrap}},
		{name: "restore another backup", spec: base + "bootstrap: {fromBackup: {backupName: b1}}", update: base + "bootstrap: {fromBackup: {backupName: b2}}",
			want: []string{`spec: Invalid value: ` + msgBootstrap}},
		{name: "user as server", spec: base, update: base + "users: [{name: imm-user-as-server-server}]",
			want: []string{"<nil>: Invalid value: " + msgUserCN}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "imm-" + strings.ReplaceAll(strings.ToLower(tc.name), " ", "-")
			name = strings.ReplaceAll(name, ".", "")
			spec := tc.spec
			if strings.Count(spec, "storage:") > 1 {
				spec = strings.Replace(spec, "storage: {size: 1Gi}\n", "", 1)
			}
			obj := clusterObject(t, ns, name, spec)
			if err := k8s.Create(ctx, obj); err != nil {
				t.Fatalf("creating the valid cluster: %v", err)
			}
			upd := clusterObject(t, ns, name, tc.update)
			upd.SetResourceVersion(obj.GetResourceVersion())
			err := k8s.Update(ctx, upd)
			if err == nil {
				t.Fatal("the API server accepted the change")
			}
			if got := causes(err); !slices.Equal(got, tc.want) {
				t.Errorf("rejection\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}

// TestValidationAcceptsGoodInput guards against rules that reject what they should allow.
func TestValidationAcceptsGoodInput(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	for i, spec := range []string{
		base,
		"replicas: 1\nversion: 3.5.35\nstorage: {size: 64Mi}",
		"version: 3.6.16\nstorage: {size: 256Mi}\netcd: {quotaBackendBytes: 134217728}", // exactly fits beside the log
		"version: 3.6.16\nstorage: {size: 3Gi}\netcd: {quotaBackendBytes: 2147483648}",
		base + "etcd: {heartbeatIntervalMillis: 200, electionTimeoutMillis: 2000, autoCompactionMode: revision, autoCompactionRetention: \"10000\"}",
		base + "etcd: {autoCompactionRetention: 30m}",
		base + "tls: {serverSecretName: s, peerSecretName: p, clientSecretName: c}",
		base + "tls: {enabled: false}",
		base + "podTemplate: {labels: {team: storage}, annotations: {note: x}}",
		base + "image: registry.example.com/etcd:v3.6.16",
		base + "volumeRetention: Delete",
		base + "tls: {rotateCA: ca-2026, renewCertificates: renew.1}",
		base + "maintenance: {defragNow: defrag-20261128-120000, moveLeader: {token: move.1, to: good-13-2}}",
		base + "maintenance: {moveLeader: {token: m1}}",
		base + "tls: {serverSecretName: s, peerSecretName: p, clientSecretName: c}\nbootstrap: {join: {endpoints: [\"https://10.0.0.5:2379\", \"https://vm-1.example.com:2379/\"], removeExternalMembers: true}}",
	} {
		if err := k8s.Create(context.Background(), clusterObject(t, ns, "good-"+strconv.Itoa(i), spec)); err != nil {
			t.Errorf("valid spec %d rejected: %v\n%s", i, err, spec)
		}
	}
}

// The go-ahead of a join, and its endpoints, may change after creation.
func TestValidationAllowsJoinSettings(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := context.Background()
	obj := clusterObject(t, ns, "join", base+"tls: {enabled: false}\n"+joinPlain)
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	upd := clusterObject(t, ns, "join", base+"tls: {enabled: false}\nbootstrap: {join: {endpoints: [\"http://10.0.0.6:2379\"], removeExternalMembers: true}}")
	upd.SetResourceVersion(obj.GetResourceVersion())
	if err := k8s.Update(ctx, upd); err != nil {
		t.Fatalf("the go-ahead was refused: %v", err)
	}
}

// A CA rotation and a renewal are asked for by changing their tokens on a running cluster.
func TestValidationAllowsRenewalAndRotation(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := context.Background()
	obj := clusterObject(t, ns, "rotate", base)
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	for i, tls := range []string{"tls: {renewCertificates: r1}", "tls: {renewCertificates: r1, rotateCA: ca-2026}", "tls: {renewCertificates: r2, rotateCA: ca-2027}"} {
		upd := clusterObject(t, ns, "rotate", base+tls)
		upd.SetResourceVersion(obj.GetResourceVersion())
		if err := k8s.Update(ctx, upd); err != nil {
			t.Fatalf("update %d (%s) refused: %v", i, tls, err)
		}
		obj = upd
	}
}

// TestScheduleValidationRefusesTimeZoneAlone: a schedule that names a time zone and no times
// (on which robfig/cron panicked) is refused by the API with what to write; a time zone
// followed by its fields is accepted.
func TestScheduleValidationRefusesTimeZoneAlone(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const msg = "schedule names a time zone and no times: write the five cron fields after it, such as CRON_TZ=Europe/Berlin 0 3 * * *"
	for i, tc := range []struct {
		schedule string
		refused  bool
	}{{"TZ=UTC", true}, {" CRON_TZ=Europe/Paris", true}, {"CRON_TZ=Europe/Paris 0 3 * * *", false}, {"0 3 * * *", false}} {
		obj := &unstructured.Unstructured{}
		doc := "apiVersion: etcd.quorate.dev/v1alpha1\nkind: EtcdBackupSchedule\nmetadata:\n  name: tz" + strconv.Itoa(i) + "\n  namespace: " + ns +
			"\nspec:\n  clusterName: demo\n  suspend: true\n  schedule: " + strconv.Quote(tc.schedule) + "\n  storage: {bucketURL: \"s3://b\"}\n"
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatal(err)
		}
		err := k8s.Create(context.Background(), obj)
		// The same rule on an EtcdCluster's defragmentation schedule.
		clusterErr := k8s.Create(context.Background(), clusterObject(t, ns, "defrag"+strconv.Itoa(i), base+"maintenance:\n  defrag:\n    schedule: "+strconv.Quote(tc.schedule)))
		if !tc.refused {
			if err != nil || clusterErr != nil {
				t.Errorf("schedule %q refused: %v; as a defragmentation schedule: %v", tc.schedule, err, clusterErr)
			}
			continue
		}
		if err == nil {
			t.Fatalf("the API server accepted schedule %q", tc.schedule)
		}
		want := []string{"spec.schedule: Invalid value: " + strconv.Quote(tc.schedule) + ": " + msg}
		if got := causes(err); !slices.Equal(got, want) {
			t.Errorf("schedule %q: rejection\n got: %q\nwant: %q", tc.schedule, got, want)
		}
		want = []string{"spec.maintenance.defrag.schedule: Invalid value: " + strconv.Quote(tc.schedule) + ": " + msg}
		if got := causes(clusterErr); !slices.Equal(got, want) {
			t.Errorf("defrag schedule %q: rejection\n got: %q\nwant: %q", tc.schedule, got, want)
		}
	}
}
