package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
)

// Status is what `status` shows of a cluster.
type Status struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	ClusterID string `json:"clusterID,omitempty"`
	Leader    string `json:"leader,omitempty"`
	Version   string `json:"version,omitempty"`
	Replicas  int32  `json:"replicas"`
	Ready     int32  `json:"readyMembers"`
	Paused    bool   `json:"paused,omitempty"`
	// Hibernation is the Hibernated condition's reason (Hibernating, Hibernated, Waking),
	// or "Requested" before the operator set it; empty when the cluster is neither
	// hibernated nor coming out of it.
	Hibernation  string         `json:"hibernation,omitempty"`
	ClaimedBy    string         `json:"claimedBy,omitempty"`
	Members      []MemberRow    `json:"members"`
	Alarms       []string       `json:"alarms,omitempty"`
	Conditions   []ConditionRow `json:"conditions,omitempty"`
	Certificates []CertRow      `json:"certificates,omitempty"`
	LastBackup   *BackupRow     `json:"lastBackup,omitempty"`
	LastDrill    *DrillRow      `json:"lastDrill,omitempty"`
	// Problems are what the plugin could not read (RBAC, an unreachable member); the rest of
	// the status is still shown.
	Problems []string `json:"problems,omitempty"`
}

// MemberRow is one member.
type MemberRow struct {
	Name        string `json:"name"`
	ID          string `json:"id,omitempty"`
	Role        string `json:"role"`
	Healthy     bool   `json:"healthy"`
	Revision    int64  `json:"revision,omitempty"`
	DBSize      int64  `json:"dbSize,omitempty"`
	DBSizeInUse int64  `json:"dbSizeInUse,omitempty"`
	Version     string `json:"version,omitempty"`
	Pod         string `json:"pod,omitempty"`
	Node        string `json:"node,omitempty"`
	Volume      string `json:"volume,omitempty"`
	Restarts    int32  `json:"restarts"`
	// Fenced: the member is fenced at the user's request (kubectl quorate fence): its etcd is
	// stopped, its pod kept.
	Fenced bool `json:"fenced,omitempty"`
}

// ConditionRow is one condition of the cluster.
type ConditionRow struct {
	Type    string      `json:"type"`
	Status  string      `json:"status"`
	Reason  string      `json:"reason"`
	Message string      `json:"message,omitempty"`
	Since   metav1.Time `json:"since"`
}

// CertRow is one certificate of the cluster's Secrets.
type CertRow struct {
	// Name of the Secret holding the certificate.
	Name     string    `json:"secret"`
	Key      string    `json:"key"`
	Subject  string    `json:"subject"`
	NotAfter time.Time `json:"notAfter"`
}

// BackupRow is the newest backup of the cluster.
type BackupRow struct {
	Name     string       `json:"name"`
	Phase    string       `json:"phase"`
	Time     *metav1.Time `json:"time,omitempty"`
	Revision int64        `json:"revision,omitempty"`
	Size     int64        `json:"size,omitempty"`
	Location string       `json:"location,omitempty"`
}

// DrillRow is the last restore drill of the cluster's schedules.
type DrillRow struct {
	Schedule string      `json:"schedule"`
	Backup   string      `json:"backup"`
	Passed   bool        `json:"passed"`
	Message  string      `json:"message"`
	Time     metav1.Time `json:"time"`
}

// Roles of members.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
	RoleLearner  = "learner"
)

// certSecrets are the cluster's Secrets holding certificates, with the keys that do; cas are
// the names of its CA Secrets when the operator generates them (caSecretsIn).
func certSecrets(c *v1alpha1.EtcdCluster, cas names.CASecrets) []string {
	if !c.Spec.TLS.IsEnabled() {
		return nil
	}
	if c.Spec.TLS.UserProvided() {
		return []string{c.Spec.TLS.ServerSecretName, c.Spec.TLS.PeerSecretName, c.Spec.TLS.ClientSecretName}
	}
	out := []string{cas.Cluster, cas.Peer, names.ServerSecret(c.Name), names.PeerSecret(c.Name), names.ClientSecret(c.Name), names.OperatorSecret(c.Name)}
	for _, u := range c.Status.Users {
		out = append(out, names.UserSecret(c.Name, u))
	}
	return out
}

// caSecretsIn names the CA Secrets of a cluster the operator generates certificates for, each
// CA on its own: the current name (names.CASecretsOf) unless only the legacy one
// (names.LegacyCASecretsOf, clusters made before it) is in the namespace. (The operator decides
// by what the certificates trust, certificates.Manager.caName; this is what a reader with no
// right to Secrets' data can tell.)
func (e *Env) caSecretsIn(ctx context.Context, c *v1alpha1.EtcdCluster) names.CASecrets {
	cur, legacy := names.CASecretsOf(c.Name), names.LegacyCASecretsOf(c.Name)
	pick := func(cur, legacy string) string {
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: cur}, &corev1.Secret{}); apierrors.IsNotFound(err) {
			if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: legacy}, &corev1.Secret{}); err == nil {
				return legacy
			}
		}
		return cur
	}
	return names.CASecrets{Cluster: pick(cur.Cluster, legacy.Cluster), Peer: pick(cur.Peer, legacy.Peer)}
}

// certRows reads the certificates (never the keys) of a Secret.
func certRows(s *corev1.Secret) []CertRow {
	var out []CertRow
	for _, k := range []string{pki.KeyCert, pki.KeyCACert} {
		if len(s.Data[k]) == 0 {
			continue
		}
		cert, err := pki.ParseCert(s.Data[k])
		if err != nil {
			continue
		}
		out = append(out, CertRow{Name: s.Name, Key: k, Subject: cert.Subject.CommonName, NotAfter: cert.NotAfter.UTC()})
	}
	return out
}

// GatherStatus reads a cluster's status from the API server and, with withEtcd, each
// member's own status through a port-forward.
func (e *Env) GatherStatus(ctx context.Context, name string, withEtcd bool) (*Status, error) {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return nil, err
	}
	st := &Status{Name: c.Name, Namespace: c.Namespace, ClusterID: c.Status.ClusterID, Leader: c.Status.Leader, Version: c.Status.CurrentVersion,
		Replicas: c.Spec.Replicas, Ready: c.Status.ReadyMembers, Paused: c.Spec.Paused, ClaimedBy: c.Status.Operator, Alarms: c.Status.Alarms}
	st.Hibernation = hibernation(c)
	for _, cond := range c.Status.Conditions {
		st.Conditions = append(st.Conditions, ConditionRow{Type: cond.Type, Status: string(cond.Status), Reason: cond.Reason, Message: cond.Message, Since: cond.LastTransitionTime})
	}
	pods := map[string]corev1.Pod{}
	var pl corev1.PodList
	if err := e.Client.List(ctx, &pl, client.InNamespace(c.Namespace), client.MatchingLabels(names.MemberSelector(c.Name))); err != nil {
		st.Problems = append(st.Problems, fmt.Sprintf("listing member pods: %v", err))
	}
	for _, p := range pl.Items {
		pods[p.Name] = p
	}
	pvcs := map[string]corev1.PersistentVolumeClaim{}
	var vl corev1.PersistentVolumeClaimList
	if err := e.Client.List(ctx, &vl, client.InNamespace(c.Namespace), client.MatchingLabels(names.MemberSelector(c.Name))); err != nil {
		st.Problems = append(st.Problems, fmt.Sprintf("listing member volumes: %v", err))
	}
	for _, v := range vl.Items {
		pvcs[v.Name] = v
	}
	for _, m := range c.Status.Members {
		row := MemberRow{Name: m.Name, ID: m.ID, Role: RoleFollower, Healthy: m.Healthy, DBSize: m.DBSize, Version: m.Version, Fenced: m.Fenced}
		switch {
		case m.IsLeader:
			row.Role = RoleLeader
		case m.Learner:
			row.Role = RoleLearner
		}
		if p, ok := pods[m.Name]; ok {
			row.Fenced = row.Fenced || p.Annotations[names.AnnotationStopEtcd] == "true"
			row.Pod = fmt.Sprintf("%s (%s)", p.Name, p.Status.Phase)
			row.Node = p.Spec.NodeName
			for _, cs := range p.Status.ContainerStatuses {
				row.Restarts += cs.RestartCount
			}
		}
		if v, ok := pvcs[m.Name]; ok {
			row.Volume = v.Spec.VolumeName
			if q, ok := v.Status.Capacity[corev1.ResourceStorage]; ok {
				row.Volume = fmt.Sprintf("%s %s", orDash(v.Spec.VolumeName), q.String())
			}
		}
		if withEtcd && e.Etcd != nil {
			if ms, err := e.memberEtcdStatus(ctx, c, m.Name); err != nil {
				st.Problems = append(st.Problems, fmt.Sprintf("etcd status of %s: %v", m.Name, err))
			} else {
				row.Revision, row.DBSize, row.DBSizeInUse, row.Version = ms.Revision, ms.DBSize, ms.DBSizeInUse, ms.Version
			}
		}
		st.Members = append(st.Members, row)
	}
	for _, sn := range certSecrets(c, e.caSecretsIn(ctx, c)) {
		s := &corev1.Secret{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: sn}, s); err != nil {
			if len(st.Problems) == 0 || !strings.HasPrefix(st.Problems[len(st.Problems)-1], "certificates") {
				st.Problems = append(st.Problems, fmt.Sprintf("certificates: reading Secret %s: %v", sn, err))
			}
			continue
		}
		st.Certificates = append(st.Certificates, certRows(s)...)
	}
	if len(st.Certificates) == 0 && c.Status.TLS != nil && c.Status.TLS.FirstExpiry != nil {
		fe := c.Status.TLS.FirstExpiry
		st.Certificates = append(st.Certificates, CertRow{Name: fe.Secret, Key: "(first to expire, from status)", NotAfter: fe.Time.UTC()})
	}
	e.gatherBackups(ctx, c, st)
	return st, nil
}

func (e *Env) memberEtcdStatus(ctx context.Context, c *v1alpha1.EtcdCluster, member string) (s struct {
	Revision, DBSize, DBSizeInUse int64
	Version                       string
}, err error) {
	conn, err := e.Etcd.Open(ctx, c, member)
	if err != nil {
		return s, err
	}
	defer func() { _ = conn.Close() }()
	ms, err := conn.Status(ctx)
	if err != nil {
		return s, err
	}
	s.Revision, s.DBSize, s.DBSizeInUse, s.Version = ms.Revision, ms.DBSize, ms.DBSizeInUse, ms.Version
	return s, nil
}

// gatherBackups finds the cluster's newest EtcdBackup and its schedules' last drill.
func (e *Env) gatherBackups(ctx context.Context, c *v1alpha1.EtcdCluster, st *Status) {
	var bl v1alpha1.EtcdBackupList
	if err := e.Client.List(ctx, &bl, client.InNamespace(c.Namespace)); err != nil {
		st.Problems = append(st.Problems, fmt.Sprintf("listing EtcdBackups: %v", err))
	}
	var newest *v1alpha1.EtcdBackup
	for i := range bl.Items {
		b := &bl.Items[i]
		if b.Spec.ClusterName != c.Name {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&b.CreationTimestamp) ||
			newest.CreationTimestamp.Equal(&b.CreationTimestamp) && newest.Name < b.Name {
			newest = b
		}
	}
	if newest != nil {
		t := newest.Status.CompletionTime
		if t == nil {
			t = &newest.CreationTimestamp
		}
		st.LastBackup = &BackupRow{Name: newest.Name, Phase: orNothing(newest.Status.Phase), Time: t, Revision: newest.Status.Revision, Size: newest.Status.Size, Location: newest.Status.Location}
		if newest.Status.Phase == "" {
			st.LastBackup.Phase = v1alpha1.BackupPending
		}
	}
	var sl v1alpha1.EtcdBackupScheduleList
	if err := e.Client.List(ctx, &sl, client.InNamespace(c.Namespace)); err != nil {
		st.Problems = append(st.Problems, fmt.Sprintf("listing EtcdBackupSchedules: %v", err))
	}
	for _, s := range sl.Items {
		d := s.Status.LastDrill
		if s.Spec.ClusterName != c.Name || d == nil {
			continue
		}
		if st.LastDrill == nil || st.LastDrill.Time.Before(&d.Time) {
			st.LastDrill = &DrillRow{Schedule: s.Name, Backup: d.Backup, Passed: d.Passed, Message: d.Message, Time: d.Time}
		}
	}
}

// Colours of the text output.
type palette struct{ good, bad, warn, reset string }

func newPalette(colour bool) palette {
	if !colour {
		return palette{}
	}
	return palette{good: "\x1b[32m", bad: "\x1b[31m", warn: "\x1b[33m", reset: "\x1b[0m"}
}

func (p palette) paint(colour, s string) string {
	if colour == "" {
		return s
	}
	return colour + s + p.reset
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// humanBytes renders a size as etcdctl does, in powers of 1024.
func humanBytes(n int64) string {
	if n == 0 {
		return "-"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// humanDuration renders the time until (or since) t in days, hours or minutes.
func humanDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d >= 48*time.Hour:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	case d >= time.Hour:
		s = fmt.Sprintf("%dh", int(d.Hours()))
	default:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	}
	if neg {
		return s + " ago"
	}
	return "in " + s
}

// conditionColour: Degraded and Alarm are bad when True, the others when False.
func conditionColour(p palette, c ConditionRow) string {
	bad := c.Status == string(metav1.ConditionFalse)
	if c.Type == v1alpha1.ConditionDegraded || c.Type == v1alpha1.ConditionAlarm {
		bad = c.Status == string(metav1.ConditionTrue)
	}
	if c.Type == v1alpha1.ConditionProgressing {
		return p.warn
	}
	if bad {
		return p.bad
	}
	return p.good
}

// RenderStatus writes the status as text, colouring states when colour is set.
func RenderStatus(w io.Writer, st *Status, now time.Time, colour bool) error {
	p := newPalette(colour)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Cluster:\t%s/%s\n", st.Namespace, st.Name)
	fmt.Fprintf(tw, "Cluster ID:\t%s\n", orDash(st.ClusterID))
	fmt.Fprintf(tw, "Version:\t%s\n", orDash(st.Version))
	ready := fmt.Sprintf("%d/%d", st.Ready, st.Replicas)
	if st.Ready < st.Replicas {
		ready = p.paint(p.warn, ready)
	} else {
		ready = p.paint(p.good, ready)
	}
	fmt.Fprintf(tw, "Ready:\t%s\n", ready)
	fmt.Fprintf(tw, "Leader:\t%s\n", orDash(st.Leader))
	if st.Paused {
		fmt.Fprintf(tw, "Paused:\t%s\n", p.paint(p.warn, "yes (spec.paused): the operator makes no changes"))
	}
	if st.Hibernation != "" {
		fmt.Fprintf(tw, "Hibernation:\t%s\n", p.paint(p.warn, hibernationLine(st.Hibernation)))
	}
	if fenced := fencedMembers(st); len(fenced) > 0 {
		fmt.Fprintf(tw, "Fenced:\t%s\n", p.paint(p.warn, strings.Join(fenced, ", ")+" (etcd stopped at your request; kubectl quorate unfence "+st.Name+" MEMBER)"))
	}
	fmt.Fprintf(tw, "Claimed by:\t%s\n", orDash(st.ClaimedBy))
	alarms := p.paint(p.good, "none")
	if len(st.Alarms) > 0 {
		alarms = p.paint(p.bad, strings.Join(st.Alarms, ", "))
	}
	fmt.Fprintf(tw, "Alarms:\t%s\n", alarms)
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := renderMembers(w, p, st); err != nil {
		return err
	}
	if err := renderConditions(w, p, st, now); err != nil {
		return err
	}
	if err := renderCertificates(w, p, st, now); err != nil {
		return err
	}
	if err := renderBackups(w, p, st, now); err != nil {
		return err
	}
	if len(st.Problems) > 0 {
		fmt.Fprintln(w, "\nNot shown:")
		for _, pr := range st.Problems {
			fmt.Fprintf(w, "  %s\n", p.paint(p.warn, pr))
		}
	}
	return nil
}

func renderMembers(w io.Writer, p palette, st *Status) error {
	fmt.Fprintln(w, "\nMembers:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tID\tROLE\tHEALTH\tREVISION\tDB SIZE\tDB IN USE\tVERSION\tPOD\tNODE\tVOLUME\tRESTARTS")
	for _, m := range st.Members {
		health := p.paint(p.good, "healthy")
		switch {
		case m.Fenced:
			health = p.paint(p.warn, "fenced")
		case !m.Healthy:
			health = p.paint(p.bad, "unhealthy")
		}
		rev := "-"
		if m.Revision != 0 {
			rev = fmt.Sprint(m.Revision)
		}
		restarts := fmt.Sprint(m.Restarts)
		if m.Restarts > 0 {
			restarts = p.paint(p.warn, restarts)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, orDash(m.ID), m.Role, health, rev, humanBytes(m.DBSize),
			humanBytes(m.DBSizeInUse), orDash(m.Version), orDash(m.Pod), orDash(m.Node), orDash(m.Volume), restarts)
	}
	return tw.Flush()
}

func renderConditions(w io.Writer, p palette, st *Status, now time.Time) error {
	fmt.Fprintln(w, "\nConditions:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tSINCE\tMESSAGE")
	for _, c := range st.Conditions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, p.paint(conditionColour(p, c), c.Status), c.Reason, humanDuration(c.Since.Sub(now)), c.Message)
	}
	return tw.Flush()
}

func renderCertificates(w io.Writer, p palette, st *Status, now time.Time) error {
	if len(st.Certificates) > 0 {
		fmt.Fprintln(w, "\nCertificates:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  SECRET\tKEY\tSUBJECT\tEXPIRES")
		certs := slices.Clone(st.Certificates)
		slices.SortStableFunc(certs, func(a, b CertRow) int { return a.NotAfter.Compare(b.NotAfter) })
		for _, c := range certs {
			left := c.NotAfter.Sub(now)
			colourOf := p.good
			switch {
			case left <= 0:
				colourOf = p.bad
			case left < 21*24*time.Hour:
				colourOf = p.warn
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Name, c.Key, orDash(c.Subject), p.paint(colourOf, c.NotAfter.Format(time.RFC3339)+" ("+humanDuration(left)+")"))
		}
		return tw.Flush()
	}
	return nil
}

func renderBackups(w io.Writer, p palette, st *Status, now time.Time) error {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if b := st.LastBackup; b != nil {
		phase := b.Phase
		switch b.Phase {
		case v1alpha1.BackupCompleted:
			phase = p.paint(p.good, phase)
		case v1alpha1.BackupFailed:
			phase = p.paint(p.bad, phase)
		}
		when := ""
		if b.Time != nil {
			when = ", " + humanDuration(b.Time.Sub(now))
		}
		fmt.Fprintf(tw, "Last backup:\t%s %s%s, revision %d, %s\n", b.Name, phase, when, b.Revision, humanBytes(b.Size))
	} else {
		fmt.Fprintf(tw, "Last backup:\t%s\n", p.paint(p.warn, "none"))
	}
	if d := st.LastDrill; d != nil {
		res := p.paint(p.good, "passed")
		if !d.Passed {
			res = p.paint(p.bad, "failed")
		}
		fmt.Fprintf(tw, "Last drill:\t%s of %s (schedule %s), %s: %s\n", res, d.Backup, d.Schedule, humanDuration(d.Time.Sub(now)), d.Message)
	} else {
		fmt.Fprintf(tw, "Last drill:\tnone\n")
	}
	return tw.Flush()
}

// RenderStatusJSON writes the status as indented JSON.
func RenderStatusJSON(w io.Writer, st *Status) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(st)
}

// fencedMembers are the members fenced at the user's request.
func fencedMembers(st *Status) []string {
	var out []string
	for _, m := range st.Members {
		if m.Fenced {
			out = append(out, m.Name)
		}
	}
	return out
}
