package certificates

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
	"github.com/quorate-dev/quorate/internal/etcd"
	"github.com/quorate-dev/quorate/internal/names"
	"github.com/quorate-dev/quorate/internal/pki"
	"github.com/quorate-dev/quorate/internal/resources"
)

// UserSecretType is the type of an application user's Secret: the servicebinding.io
// convention for an etcd binding.
const UserSecretType corev1.SecretType = "servicebinding.io/etcd"

// SyncUsers gives every application user of spec.users its Secret, then, once the cluster is
// settled, makes etcd's users, roles and authentication match (see authSpec). Users' Secrets
// exist before authentication goes on, so no declared application is locked out; the operator
// (quorate-operator) and the members' own certificate (used for leadership hand-over) are etcd
// admins.
//
// cl is the pass's client of the cluster (nil when no member could be dialled), settled says
// the pass planned no step.
// Its share of the status (the users' certificates' first expiry, authentication and the
// users) comes with an error too: what it did before the error is reported.
func (m *Manager) SyncUsers(ctx context.Context, c *v1alpha1.EtcdCluster, cl etcd.Client, settled bool) (Share, error) {
	if len(c.Spec.Users) == 0 && !c.Status.AuthEnabled && !m.authOnInEtcd(ctx, c, cl, settled) {
		return Share{}, nil
	}
	found := &expiries{first: firstExpiry(c)}
	if err := m.ensureUserSecrets(withExpiries(ctx, found), c); err != nil {
		return found.share(), err
	}
	if c.Spec.Paused || !settled || cl == nil {
		return found.share(), nil // one change at a time: membership first
	}
	spec := authSpec(c)
	var declared []string
	for _, u := range c.Spec.Users {
		spec.Users = append(spec.Users, etcd.User{Name: u.Name, ReadWrite: u.ReadWrite, ReadOnly: u.ReadOnly})
		declared = append(declared, u.Name)
	}
	changes, err := cl.SyncAuth(ctx, spec)
	if len(changes) > 0 {
		m.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventUsersChanged, "etcd authentication: %s", strings.Join(changes, "; "))
	}
	if err != nil {
		return found.share(), fmt.Errorf("applying spec.users to etcd: %w", err)
	}
	slices.Sort(declared)
	share := found.share()
	share.setUsers, share.authEnabled, share.users = true, spec.Enabled, declared
	return share, nil
}

// authOnInEtcd asks etcd, once per cluster and process, whether authentication is on although
// status says it is off: status was lost, or the cluster was adopted from retained volumes or
// restored from a backup of a cluster that had users. Then authentication stays on (and the
// managed users of the earlier spec go) as if status had said so. Asked only from a settled
// pass with a client; a failed question is asked again.
func (m *Manager) authOnInEtcd(ctx context.Context, c *v1alpha1.EtcdCluster, cl etcd.Client, settled bool) bool {
	if !settled || cl == nil || c.Spec.Paused {
		return false
	}
	if _, asked := m.authAsked.Load(c.UID); asked {
		return false
	}
	on, err := cl.AuthEnabled(ctx)
	if err != nil {
		return false
	}
	m.authAsked.Store(c.UID, true)
	return on
}

// authSpec is the authentication c should have, less its users' permissions. It goes on with
// the first declared user and stays on once it was on: turned off, every certificate the CA
// ever signed, removed users' too (valid for months), would have full access again. While no
// user is declared the shared client certificate (<cluster>-client-tls, common name
// quorate-client) is an admin, as it has full access before authentication is ever on; while
// users are declared it has none.
func authSpec(c *v1alpha1.EtcdCluster) etcd.AuthSpec {
	// SyncUsers goes this far with no user declared only when authentication is on.
	spec := etcd.AuthSpec{Enabled: true, Admins: []string{names.OperatorCN, names.ServerCN(c.Name)}}
	if len(c.Spec.Users) == 0 {
		spec.Admins = append(spec.Admins, names.ClientCN)
	} else {
		spec.Retired = []string{names.ClientCN}
	}
	return spec
}

// ensureUserSecrets issues each declared user a client certificate (common name: the user)
// from the cluster CA, renews it like the operator's other certificates, and deletes the
// Secrets of users no longer declared. While the cluster is paused it only renews the
// certificates that are due: no Secret is made or deleted, and renewCertificates waits.
func (m *Manager) ensureUserSecrets(ctx context.Context, c *v1alpha1.EtcdCluster) error {
	now := time.Now()
	renewAll := renewAllRequested(c) && !c.Spec.Paused
	var a *authority
	for _, u := range c.Spec.Users {
		name := names.UserSecret(c.Name, u.Name)
		s, err := m.secret(ctx, c.Namespace, name)
		found := err == nil
		switch {
		case err == nil && !resources.Retained(c, s):
			return fmt.Errorf("secret %s exists but does not belong to EtcdCluster %s: delete or rename it, or rename user %s", name, c.Name, u.Name)
		case err != nil && !apierrors.IsNotFound(err):
			return err
		case !found && c.Spec.Paused:
			continue
		}
		if a == nil {
			cas, err := m.caSecrets(ctx, c)
			if err != nil {
				return err
			}
			got, err := m.authorityOf(ctx, c, caKinds(c, cas)[0])
			if err != nil {
				return err
			}
			a = &got
		}
		req := pki.Request{CommonName: u.Name, Usage: pki.ClientOnly, Validity: m.certLifetime()}
		if found {
			if wrote, err := m.conform(ctx, c, s, *a, req, now); err != nil || wrote {
				return err
			}
			if !renewAll && !m.renewalDue(s, now) {
				continue
			}
		}
		caPEM := a.bundle
		if caPEM == nil {
			caPEM = a.signer.CertPEM
		}
		pair, err := a.signer.Sign(req, now)
		if err != nil {
			return err
		}
		if found {
			if err := m.renew(ctx, c, s, a.signer, caPEM, pair); err != nil {
				return err
			}
			continue
		}
		if err := m.Create(ctx, userSecret(c, u.Name, caPEM, pair)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating secret %s: %w", name, err)
		}
		m.Recorder.Eventf(c, corev1.EventTypeNormal, v1alpha1.EventCertificateIssued, "issued %s from %s", name, a.signer.Cert.Subject.CommonName)
	}
	if c.Spec.Paused {
		return nil
	}
	var list corev1.SecretList
	if err := m.APIReader.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{names.LabelCluster: c.Name}, client.HasLabels{names.LabelUser}); err != nil {
		return err
	}
	for i := range list.Items {
		s := &list.Items[i]
		user := s.Labels[names.LabelUser]
		if slices.ContainsFunc(c.Spec.Users, func(u v1alpha1.UserSpec) bool { return u.Name == user }) || !resources.Retained(c, s) {
			continue
		}
		if err := m.Objects.DeleteOwned(ctx, c, s, v1alpha1.EventUsersChanged, fmt.Sprintf("user %s is no longer in spec.users", user)); err != nil {
			return err
		}
	}
	return nil
}

// userSecret is an application user's binding: the servicebinding.io layout for etcd.
func userSecret(c *v1alpha1.EtcdCluster, user string, caPEM []byte, pair pki.Pair) *corev1.Secret {
	host := names.ClientHost(c.Name, c.Namespace)
	labels := names.ClusterLabels(c.Name)
	labels[names.LabelUser] = user
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: names.UserSecret(c.Name, user), Namespace: c.Namespace, Labels: labels},
		Type:       UserSecretType,
		Data: map[string][]byte{
			"type":        []byte("etcd"),
			"provider":    []byte("quorate"),
			"host":        []byte(host),
			"port":        []byte(strconv.Itoa(names.ClientPort)),
			"endpoints":   []byte(fmt.Sprintf("https://%s:%d", host, names.ClientPort)),
			"username":    []byte(user),
			pki.KeyCert:   pair.CertPEM,
			pki.KeyKey:    pair.KeyPEM,
			pki.KeyCACert: caPEM,
		},
	}
	resources.SetRetention(c, s)
	return s
}
