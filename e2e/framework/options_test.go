package framework

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/quorate-dev/quorate/e2e/workload"
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

// --client-profiles is read into the workload's profiles; an unknown one is refused.
func TestCheckClientProfiles(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want []workload.Profile
		err  string
	}{
		{flag: "member-aware", want: []workload.Profile{workload.MemberAware}},
		{flag: "member-aware,service-only", want: []workload.Profile{workload.MemberAware, workload.ServiceOnly}},
		{flag: "service", err: `--client-profiles="service": unknown client profile "service": want one of member-aware,service-only`},
	} {
		o := &Options{ClientProfiles: tc.flag}
		err := o.checkClientProfiles()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err || (err == nil && !slices.Equal(o.Profiles(), tc.want)) {
			t.Errorf("--client-profiles=%q: %v, %q; want %v, %q", tc.flag, o.Profiles(), got, tc.want, tc.err)
		}
	}
	if got := (&Options{}).Profiles(); !slices.Equal(got, []workload.Profile{workload.DefaultProfile}) {
		t.Errorf("unparsed options: profiles %v, want the default alone", got)
	}
}

// The default profile alone keeps the workload's arguments as they were; more profiles add
// them with the client Service for the service-only one, and the CPU request is for each.
func TestWorkloadPodProfiles(t *testing.T) {
	common := []string{"--endpoints=https://c-client.ns.svc:2379", "--server-name=c-client.ns.svc", "--peer-service=c-peer.ns.svc", "--clients=16", "--rate=500", "--tls-dir=/tls"}
	for _, tc := range []struct {
		profiles string
		args     []string
		cpu      string
	}{
		{"member-aware", common, "250m"},
		{"member-aware,service-only", append(slices.Clone(common[:5]), "--profiles=member-aware,service-only", "--service-endpoint=https://c-client.ns.svc:2379", "--tls-dir=/tls"), "500m"},
		{"service-only", append(slices.Clone(common[:5]), "--profiles=service-only", "--service-endpoint=https://c-client.ns.svc:2379", "--tls-dir=/tls"), "250m"},
	} {
		o := &Options{WorkloadCPU: "250m", Rate: 500, Clients: 16, ClientProfiles: tc.profiles}
		if err := o.checkWorkloadCPU(); err != nil {
			t.Fatal(err)
		}
		if err := o.checkClientProfiles(); err != nil {
			t.Fatal(err)
		}
		r := &Run{Suite: &Suite{Opts: o}, Cluster: "c", Namespace: "ns"}
		c := r.workloadPod().Spec.Containers[0]
		if !slices.Equal(c.Args, tc.args) {
			t.Errorf("--client-profiles=%s: args\n%q\nwant\n%q", tc.profiles, c.Args, tc.args)
		}
		if q := c.Resources.Requests.Cpu(); q.Cmp(resource.MustParse(tc.cpu)) != 0 {
			t.Errorf("--client-profiles=%s: cpu request %s, want %s", tc.profiles, q, tc.cpu)
		}
	}
}

// A scenario that starts on an external cluster runs no service-only load: the client Service
// has no member when its load starts.
func TestExternalScenarioProfiles(t *testing.T) {
	external := func(context.Context, *Run) ([]string, error) { return nil, nil }
	for _, tc := range []struct {
		flag string
		want []workload.Profile
	}{
		{"member-aware,service-only", []workload.Profile{workload.MemberAware}},
		{"service-only,member-aware", []workload.Profile{workload.MemberAware}},
		{"service-only", []workload.Profile{workload.MemberAware}},
	} {
		o := &Options{ClientProfiles: tc.flag}
		if err := o.checkClientProfiles(); err != nil {
			t.Fatal(err)
		}
		r := &Run{Suite: &Suite{Opts: o}, Scenario: Scenario{External: external}}
		if got := r.profiles(); !slices.Equal(got, tc.want) {
			t.Errorf("--client-profiles=%s, external cluster: %v, want %v", tc.flag, got, tc.want)
		}
		r.Scenario.External = nil
		if got := r.profiles(); !slices.Equal(got, o.Profiles()) {
			t.Errorf("--client-profiles=%s: %v, want %v", tc.flag, got, o.Profiles())
		}
	}
}
