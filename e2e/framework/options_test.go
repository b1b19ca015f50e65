package framework

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCheckWorkloadCPU(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want resource.Quantity
		err  string
	}{
		{flag: "", want: resource.Quantity{}},
		{flag: "0", want: resource.MustParse("0")},
		{flag: "250m", want: resource.MustParse("250m")},
		{flag: "1", want: resource.MustParse("1")},
		{flag: "lots", err: `--workload-cpu="lots" is not a CPU quantity such as 250m or 1 (or 0 for no request)`},
		{flag: "-100m", err: `--workload-cpu="-100m" is not a CPU quantity such as 250m or 1 (or 0 for no request)`},
	} {
		o := &Options{WorkloadCPU: tc.flag}
		err := o.checkWorkloadCPU()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("--workload-cpu=%q: error %q, want %q", tc.flag, got, tc.err)
			continue
		}
		if tc.err == "" && o.workloadCPU.Cmp(tc.want) != 0 {
			t.Errorf("--workload-cpu=%q: request %s, want %s", tc.flag, o.workloadCPU.String(), tc.want.String())
		}
	}
}

// The workload pod asks for the CPU --workload-cpu names, and for none with 0.
func TestWorkloadPodCPU(t *testing.T) {
	for _, flag := range []string{"250m", "0"} {
		o := &Options{WorkloadCPU: flag, Rate: 500, Clients: 16}
		if err := o.checkWorkloadCPU(); err != nil {
			t.Fatal(err)
		}
		r := &Run{Suite: &Suite{Opts: o}, Cluster: "c", Namespace: "ns"}
		got := r.workloadPod().Spec.Containers[0].Resources.Requests
		if flag == "0" {
			if len(got) != 0 {
				t.Errorf("--workload-cpu=0: requests %v, want none", got)
			}
			continue
		}
		if q := got.Cpu(); q.Cmp(resource.MustParse(flag)) != 0 || len(got) != 1 {
			t.Errorf("--workload-cpu=%s: requests %v, want cpu %s only", flag, got, flag)
		}
	}
}
