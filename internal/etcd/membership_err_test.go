package etcd

import (
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func TestMembershipErr(t *testing.T) {
	other := errors.New("etcdserver: request timed out")
	for _, tc := range []struct {
		name     string
		in, want error
	}{
		{"the gRPC status a client receives", rpctypes.ErrGRPCUnhealthy, ErrUnhealthyCluster},
		{"the client's own error value", rpctypes.ErrUnhealthy, ErrUnhealthyCluster},
		{"any other error, unchanged", other, other},
	} {
		if got := membershipErr(tc.in); got != tc.want {
			t.Errorf("%s: membershipErr(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
}
