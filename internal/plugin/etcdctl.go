package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// pickMember is the member etcdctl talks to: the one asked for, or the first healthy member
// (a follower before the leader, to spare it), or the first member.
func pickMember(c *v1alpha1.EtcdCluster, want string) (string, error) {
	if want != "" {
		for _, m := range c.Status.Members {
			if m.Name == want {
				return want, nil
			}
		}
		return "", fmt.Errorf("cluster %s has no member %s", c.Name, want)
	}
	var leader string
	for _, m := range c.Status.Members {
		if !m.Healthy {
			continue
		}
		if m.IsLeader {
			leader = m.Name
			continue
		}
		return m.Name, nil
	}
	if leader != "" {
		return leader, nil
	}
	if len(c.Status.Members) > 0 {
		return c.Status.Members[0].Name, nil
	}
	return "", fmt.Errorf("cluster %s has no members in its status yet", c.Name)
}

// etcdctlArgs are the connection flags for etcdctl, before the user's arguments.
func etcdctlArgs(endpoint, dir string, creds Credentials, user []string) []string {
	args := []string{"--endpoints=" + endpoint}
	if !creds.PlaintextNoSecrets {
		args = append(args, "--cacert="+filepath.Join(dir, "ca.crt"), "--cert="+filepath.Join(dir, "tls.crt"), "--key="+filepath.Join(dir, "tls.key"))
	}
	return append(args, user...)
}

// writeCredentials writes the client certificate into dir, readable by the user alone.
func writeCredentials(dir string, creds Credentials) error {
	if creds.PlaintextNoSecrets {
		return nil
	}
	for name, data := range map[string][]byte{"ca.crt": creds.CAPEM, "tls.crt": creds.CertPEM, "tls.key": creds.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Etcdctl runs the etcdctl found in PATH against one member of the cluster, through a
// port-forward to its pod, with the operator's client certificate written to a private
// temporary directory that is removed afterwards. It returns etcdctl's exit code.
func (e *Env) Etcdctl(ctx context.Context, name, member string, args []string) (int, error) {
	bin, err := exec.LookPath("etcdctl")
	if err != nil {
		return 1, errors.New("etcdctl is not in PATH: install the etcdctl of the cluster's etcd release (https://github.com/etcd-io/etcd/releases)")
	}
	c, err := e.cluster(ctx, name)
	if err != nil {
		return 1, err
	}
	m, err := pickMember(c, member)
	if err != nil {
		return 1, err
	}
	conn, err := e.Etcd.Open(ctx, c, m)
	if err != nil {
		return 1, fmt.Errorf("reaching member %s: %w", m, err)
	}
	defer func() { _ = conn.Close() }()
	dir, err := os.MkdirTemp("", "kubectl-quorate-")
	if err != nil {
		return 1, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := writeCredentials(dir, conn.Credentials()); err != nil {
		return 1, fmt.Errorf("writing the client certificate to %s: %w", dir, err)
	}
	fmt.Fprintf(e.Err, "etcdctl against %s of %s/%s (port-forward %s, certificate of Secret %s)\n", m, c.Namespace, c.Name, conn.Endpoint(), orDash(conn.Credentials().From))
	cmd := exec.CommandContext(ctx, bin, etcdctlArgs(conn.Endpoint(), dir, conn.Credentials(), args)...) //nolint:gosec // the user's etcdctl with the user's arguments, as the command promises
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.Out, e.Err
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), nil
		}
		return 1, err
	}
	return 0, nil
}
