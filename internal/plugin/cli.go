package plugin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Usage is the plugin's help.
const Usage = `kubectl quorate: inspect and operate Quorate etcd clusters with your kubeconfig and RBAC.

Commands:
  status CLUSTER [-o json] [--no-etcd] [--color auto|always|never]
  etcdctl CLUSTER [--member NAME] -- ARGS...     run etcdctl (from PATH) against a member
  backup CLUSTER [--to BUCKET_URL [--prefix P] [--credentials-secret S]]
  restore BACKUP --into NAME [--to-revision R] [--version V] [--storage-size Q] [--replicas N]
  renew-certificates CLUSTER [--token T]
  defrag CLUSTER [--token T]                     defragment every member once, followers first, the leader last
  move-leader CLUSTER [--to MEMBER] [--token T]  hand the leadership to MEMBER (default: another healthy voter)
  pause CLUSTER
  fence CLUSTER MEMBER                           stop a member's etcd, keeping its pod (refused if it would lose quorum)
  unfence CLUSTER MEMBER                         start a fenced member's etcd again
  resume CLUSTER
  hibernate CLUSTER                              stop every member pod, keeping the volumes
  wake CLUSTER                                   restart a hibernated cluster from its volumes
  report CLUSTER|operator [-f FILE.zip] [--operator-namespace NS]
  disk-check --storage-class SC [--size 1Gi] [--image OPERATOR_IMAGE]

Every command takes --kubeconfig, --context, -n/--namespace; the commands that change a
cluster wait for the operator to act on it (--timeout, default 10m) and show its progress.
`

// ExitError carries an exit code other than 1 (etcdctl's own).
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// opts are the flags of every command.
type opts struct {
	kube                              KubeFlags
	timeout                           time.Duration
	output, colour                    string
	noEtcd                            bool
	to, prefix, credentials           string
	into, version, storageSize, token string
	replicas                          int
	toRevision                        int64
	member, file, operatorNS          string
	logLines                          int64
	storageClass, size, image         string
}

func flagSet(o *opts, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kubectl-quorate", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() { _, _ = io.WriteString(errOut, Usage) }
	fs.StringVar(&o.kube.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file")
	fs.StringVar(&o.kube.Context, "context", "", "kubeconfig context to use")
	fs.StringVar(&o.kube.Namespace, "namespace", "", "namespace of the cluster")
	fs.StringVar(&o.kube.Namespace, "n", "", "namespace of the cluster (short)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "how long to wait for the operator")
	fs.StringVar(&o.output, "output", "", "output format: json")
	fs.StringVar(&o.output, "o", "", "output format: json (short)")
	fs.StringVar(&o.colour, "color", "auto", "colours: auto, always or never")
	fs.BoolVar(&o.noEtcd, "no-etcd", false, "status: do not reach etcd (no revision, DB in use)")
	fs.StringVar(&o.to, "to", "", "backup: bucket URL (default: the storage of the cluster's EtcdBackupSchedule); move-leader: the member to hand the leadership to (default: another healthy voter)")
	fs.StringVar(&o.prefix, "prefix", "", "backup: key prefix in the bucket")
	fs.StringVar(&o.credentials, "credentials-secret", "", "backup: Secret with the bucket's credentials")
	fs.StringVar(&o.into, "into", "", "restore: name of the new EtcdCluster")
	fs.StringVar(&o.version, "version", "", "restore: etcd version of the new cluster")
	fs.StringVar(&o.storageSize, "storage-size", "", "restore: volume size of the new cluster")
	fs.IntVar(&o.replicas, "replicas", 0, "restore: members of the new cluster")
	fs.Int64Var(&o.toRevision, "to-revision", 0, "restore: the revision to restore to; only a revision a completed backup of the cluster holds")
	fs.StringVar(&o.token, "token", "", "renew-certificates, defrag, move-leader: the token to set (default: renew-, defrag- or move-<time>)")
	fs.StringVar(&o.member, "member", "", "etcdctl: the member to talk to (default: a healthy follower)")
	fs.StringVar(&o.file, "f", "", "report: the zip file to write (default: quorate-report-<target>-<time>.zip)")
	fs.StringVar(&o.operatorNS, "operator-namespace", "quorate-system", "report: namespace of the operator")
	fs.Int64Var(&o.logLines, "log-lines", 5000, "report: lines of each log to keep")
	fs.StringVar(&o.storageClass, "storage-class", "", "disk-check: the StorageClass to measure (default: the cluster's default class)")
	fs.StringVar(&o.size, "size", "1Gi", "disk-check: size of the volume to measure")
	fs.StringVar(&o.image, "image", "", "disk-check: image holding /quorate-backup (default: the operator's)")
	return fs
}

// parseArgs parses flags anywhere among the positional arguments, as kubectl does;
// everything after "--" is passed on untouched (etcdctl's arguments).
func parseArgs(fs *flag.FlagSet, args []string) (positional, rest []string, err error) {
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		if fs.NArg() == 0 {
			return positional, rest, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// useColour: always, never, or auto (a terminal, and NO_COLOR unset).
func useColour(mode string, out io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := out.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Run runs the plugin with the command line args (without the program name). newEnv builds
// the Env from the connection flags (NewEnv; a fake in tests).
func Run(ctx context.Context, args []string, out, errOut io.Writer, newEnv func(KubeFlags, io.Writer, io.Writer) (*Env, error)) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		_, err := io.WriteString(out, Usage)
		return err
	}
	cmd := args[0]
	var o opts
	fs := flagSet(&o, errOut)
	pos, rest, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	one := func(what string) (string, error) {
		if len(pos) != 1 {
			return "", fmt.Errorf("%s takes one %s, got %d arguments; see kubectl quorate help", cmd, what, len(pos))
		}
		return pos[0], nil
	}
	if cmd == "disk-check" {
		if len(pos) != 0 || len(rest) != 0 {
			return errors.New("disk-check takes no arguments: name the class with --storage-class")
		}
		env, err := newEnv(o.kube, out, errOut)
		if err != nil {
			return err
		}
		return env.DiskCheck(ctx, DiskCheckOptions{StorageClass: o.storageClass, Image: o.image, Size: o.size, OperatorNamespace: o.operatorNS, Timeout: o.timeout})
	}
	if cmd == "fence" || cmd == "unfence" {
		if len(pos) != 2 || len(rest) != 0 {
			return fmt.Errorf("%s takes a CLUSTER and a MEMBER, got %d arguments; see kubectl quorate help", cmd, len(pos))
		}
		env, err := newEnv(o.kube, out, errOut)
		if err != nil {
			return err
		}
		return env.SetFenced(ctx, pos[0], pos[1], cmd == "fence", o.timeout)
	}
	if !slices.Contains([]string{"status", "etcdctl", "backup", "restore", "renew-certificates", "defrag", "move-leader", "pause", "resume", "hibernate", "wake", "report"}, cmd) {
		return fmt.Errorf("unknown command %q; see kubectl quorate help", cmd)
	}
	target, err := one(map[bool]string{true: "BACKUP", false: "CLUSTER"}[cmd == "restore"])
	if err != nil {
		return err
	}
	if len(rest) > 0 && cmd != "etcdctl" {
		return fmt.Errorf("%s takes no arguments after --", cmd)
	}
	env, err := newEnv(o.kube, out, errOut)
	if err != nil {
		return err
	}
	return runCommand(ctx, env, cmd, target, rest, &o)
}

// runCommand runs one of the commands that take a cluster (or a backup).
func runCommand(ctx context.Context, env *Env, cmd, target string, rest []string, o *opts) error {
	out := env.Out
	switch cmd {
	case "status":
		st, err := env.GatherStatus(ctx, target, !o.noEtcd)
		if err != nil {
			return err
		}
		switch o.output {
		case "json":
			return RenderStatusJSON(out, st)
		case "":
			return RenderStatus(out, st, env.Now(), useColour(o.colour, out))
		}
		return fmt.Errorf("-o %s: only json is supported (or no -o for text)", o.output)
	case "etcdctl":
		if len(rest) == 0 {
			return errors.New("etcdctl needs the etcdctl arguments after --, such as: kubectl quorate etcdctl CLUSTER -- member list -w table")
		}
		code, err := env.Etcdctl(ctx, target, o.member, rest)
		if err != nil {
			return err
		}
		if code != 0 {
			return ExitError{Code: code}
		}
		return nil
	case "backup":
		return env.Backup(ctx, target, BackupOptions{To: o.to, Prefix: o.prefix, CredentialsSecret: o.credentials, Timeout: o.timeout})
	case "restore":
		if o.replicas < 0 || o.replicas > 9 {
			return fmt.Errorf("--replicas %d: a cluster has 1 to 9 members", o.replicas)
		}
		return env.Restore(ctx, target, RestoreOptions{Into: o.into, Version: o.version, StorageSize: o.storageSize, Replicas: int32(o.replicas), ToRevision: o.toRevision, Timeout: o.timeout})
	case "renew-certificates":
		return env.RenewCertificates(ctx, target, o.token, o.timeout)
	case "defrag":
		return env.Defrag(ctx, target, o.token, o.timeout)
	case "move-leader":
		return env.MoveLeader(ctx, target, o.to, o.token, o.timeout)
	case "pause", "resume":
		return env.SetPaused(ctx, target, cmd == "pause", o.timeout)
	case "hibernate", "wake":
		return env.SetHibernate(ctx, target, cmd == "hibernate", o.timeout)
	case "report":
		file := o.file
		if file == "" {
			file = fmt.Sprintf("quorate-report-%s-%s.zip", strings.ReplaceAll(target, "/", "-"), env.Now().UTC().Format("20060102-150405"))
		}
		f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600) //nolint:gosec // the file the user names with -f
		if err != nil {
			return err
		}
		if err := env.Report(ctx, target, ReportOptions{OperatorNamespace: o.operatorNS, LogLines: o.logLines}, f); err != nil {
			_ = f.Close()
			_ = os.Remove(file)
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s: check problems.txt in it for what could not be collected\n", file)
	}
	return nil
}
