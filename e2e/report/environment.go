package report

import (
	"fmt"
	"html"
	"strings"
	"time"
)

// Environment is what the run ran against, recorded before its first scenario, so that a
// failure can be told apart as the environment's or the operator's.
type Environment struct {
	// Kubernetes is the API server's version, Platform its OS/architecture.
	Kubernetes string `json:"kubernetes,omitempty"`
	Platform   string `json:"platform,omitempty"`
	// Distribution is the suite's reading of what built the cluster, with what gave it away
	// ("OpenShift (config.openshift.io served)", "EKS (-eks- in the version)").
	Distribution string `json:"distribution,omitempty"`
	// Provider is the suite's --provider: local (a cluster it started), kind or existing.
	Provider string     `json:"provider,omitempty"`
	Nodes    []EnvNode  `json:"nodes,omitempty"`
	CNI      string     `json:"cni,omitempty"`
	Storage  []EnvClass `json:"storageClasses,omitempty"`
	// Operator is the operator's Deployment as it runs: its containers' images with the
	// digests the kubelet pulled, and the manager's arguments.
	Operator *EnvOperator `json:"operator,omitempty"`
	// Etcd is the etcd version the scenarios create clusters at, and the image override if
	// any (the operator's image for the version otherwise).
	Etcd string `json:"etcd,omitempty"`
	// Fsync is how long a small write and its fdatasync took on a fresh volume of the
	// scenarios' StorageClass (the suite's probe pod; --fsync-probe).
	Fsync *EnvFsync `json:"fsync,omitempty"`
	// Problems are what could not be read, and why (a right the suite lacks, say).
	Problems []string `json:"problems,omitempty"`
}

// EnvNode is one node.
type EnvNode struct {
	Name             string `json:"name"`
	Kernel           string `json:"kernel,omitempty"`
	OS               string `json:"os,omitempty"`
	ContainerRuntime string `json:"containerRuntime,omitempty"`
	Kubelet          string `json:"kubelet,omitempty"`
	CPU              string `json:"cpu,omitempty"`
	Memory           string `json:"memory,omitempty"`
	Ready            bool   `json:"ready"`
}

// EnvClass is a StorageClass the run may use.
type EnvClass struct {
	Name        string `json:"name"`
	Provisioner string `json:"provisioner"`
	Default     bool   `json:"default,omitempty"`
	Expansion   bool   `json:"expansion,omitempty"`
	Binding     string `json:"binding,omitempty"`
}

// EnvFsync is what the fsync probe measured (internal/diskcheck's disk check, on a fresh
// volume of the scenarios' StorageClass).
type EnvFsync struct {
	StorageClass string        `json:"storageClass"`
	Node         string        `json:"node,omitempty"`
	Samples      int           `json:"samples"`
	BlockSize    int           `json:"blockSize"`
	P50          time.Duration `json:"p50"`
	P99          time.Duration `json:"p99"`
	Max          time.Duration `json:"max"`
	// Judgement is the result against etcd's guidance, a line each (diskcheck.Judge).
	Judgement []string `json:"judgement,omitempty"`
}

// EnvOperator is the operator as it runs.
type EnvOperator struct {
	Namespace string   `json:"namespace"`
	Images    []string `json:"images,omitempty"`
	Args      []string `json:"args,omitempty"`
}

// rows are the environment as (what, value) pairs, in the order the report shows them.
func (e *Environment) rows() [][2]string {
	var out [][2]string
	add := func(k, v string) {
		if v != "" {
			out = append(out, [2]string{k, v})
		}
	}
	add("Kubernetes", strings.TrimSpace(e.Kubernetes+" "+e.Platform))
	add("distribution", e.Distribution)
	add("provider", e.Provider)
	for _, n := range e.Nodes {
		ready := ""
		if !n.Ready {
			ready = ", not Ready"
		}
		add("node "+n.Name, fmt.Sprintf("%s, kernel %s, %s, kubelet %s, %s CPU, %s memory%s", n.OS, n.Kernel, n.ContainerRuntime, n.Kubelet, n.CPU, n.Memory, ready))
	}
	add("CNI", e.CNI)
	for _, c := range e.Storage {
		var notes []string
		if c.Default {
			notes = append(notes, "default")
		}
		if c.Expansion {
			notes = append(notes, "volume expansion")
		}
		if c.Binding != "" {
			notes = append(notes, c.Binding)
		}
		add("StorageClass "+c.Name, strings.Join(append([]string{c.Provisioner}, notes...), ", "))
	}
	if o := e.Operator; o != nil {
		add("operator images", strings.Join(o.Images, " "))
		add("operator arguments", strings.Join(o.Args, " "))
	}
	add("etcd", e.Etcd)
	if f := e.Fsync; f != nil {
		what := fmt.Sprintf("%d writes of %d B, each made durable with fdatasync", f.Samples, f.BlockSize)
		if len(f.Judgement) == 0 {
			// A report of a probe that judged nothing: the figures alone.
			r := 10 * time.Microsecond
			what += fmt.Sprintf(": p50 %s, p99 %s, max %s", f.P50.Round(r), f.P99.Round(r), f.Max.Round(r))
		}
		add(fmt.Sprintf("fsync (StorageClass %s, node %s)", f.StorageClass, f.Node), strings.Join(append([]string{what}, f.Judgement...), "; "))
	}
	for _, p := range e.Problems {
		add("not recorded", p)
	}
	return out
}

// markdown is the environment as a two-column table.
func (e *Environment) markdown() string {
	var b strings.Builder
	b.WriteString("## Environment\n\n| | |\n|---|---|\n")
	for _, r := range e.rows() {
		fmt.Fprintf(&b, "| %s | %s |\n", r[0], strings.ReplaceAll(r[1], "|", `\|`))
	}
	return b.String()
}

// html is the environment as a two-column table.
func (e *Environment) html() string {
	var b strings.Builder
	b.WriteString("<h3>Environment</h3><table>")
	for _, r := range e.rows() {
		fmt.Fprintf(&b, "<tr><th>%s</th><td>%s</td></tr>", html.EscapeString(r[0]), html.EscapeString(r[1]))
	}
	b.WriteString("</table>")
	return b.String()
}
