package report

import (
	"strings"
	"testing"
	"time"
)

func TestEnvironmentInTheSummary(t *testing.T) {
	r := &Report{K8sVersion: "v1.34.2", Environment: &Environment{Kubernetes: "v1.34.2", Platform: "linux/amd64", Distribution: "EKS (-eks- in the version)", Provider: "existing",
		Nodes:    []EnvNode{{Name: "w1", Kernel: "6.1.0", OS: "Debian 12", ContainerRuntime: "containerd://1.7.24", Kubelet: "v1.34.2", CPU: "4", Memory: "16Gi"}},
		CNI:      "Amazon VPC CNI",
		Storage:  []EnvClass{{Name: "gp3", Provisioner: "ebs.csi.aws.com", Default: true, Expansion: true, Binding: "WaitForFirstConsumer"}},
		Operator: &EnvOperator{Namespace: "quorate-system", Images: []string{"op@sha256:01"}, Args: []string{"--a", "--b"}},
		Etcd:     "3.6.16", Problems: []string{"x: the suite may not read them"},
		Fsync: &EnvFsync{StorageClass: "gp3", Node: "w1", Samples: 1000, BlockSize: 2300, P50: 1234567 * time.Nanosecond, P99: 8 * time.Millisecond, Max: 15 * time.Millisecond,
			Judgement: []string{"ok: within", "throughput 100 MiB/s"}}}}
	want := `## Environment

| | |
|---|---|
| Kubernetes | v1.34.2 linux/amd64 |
| distribution | EKS (-eks- in the version) |
| provider | existing |
| node w1 | Debian 12, kernel 6.1.0, containerd://1.7.24, kubelet v1.34.2, 4 CPU, 16Gi memory, not Ready |
| CNI | Amazon VPC CNI |
| StorageClass gp3 | ebs.csi.aws.com, default, volume expansion, WaitForFirstConsumer |
| operator images | op@sha256:01 |
| operator arguments | --a --b |
| etcd | 3.6.16 |
| fsync (StorageClass gp3, node w1) | 1000 writes of 2300 B, each made durable with fdatasync; ok: within; throughput 100 MiB/s |
| not recorded | x: the suite may not read them |
`
	if md := r.Markdown(); !strings.Contains(md, want) {
		t.Errorf("summary.md lacks the environment:\n%s", md)
	}
	if page := HTML([]*Report{r}); !strings.Contains(page, "<h3>Environment</h3><table><tr><th>Kubernetes</th><td>v1.34.2 linux/amd64</td></tr>") {
		t.Errorf("index.html lacks the environment:\n%s", page)
	}
}
