package etcd

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.etcd.io/etcd/api/v3/authpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// RolePrefix names the etcd roles the operator manages for application users: the role of
// user u is RolePrefix+u.
const RolePrefix = "quorate-user-"

// AuthSpec is the etcd authentication a cluster should have.
type AuthSpec struct {
	// Enabled turns authentication on. Off, the managed users and roles are removed.
	Enabled bool
	// Admins get the root role ("root" itself is always one, as etcd requires). They
	// authenticate with client certificates whose common name is their name.
	Admins []string
	// Users are the applications' users, each with a role of their own.
	Users []User
	// Retired are users the operator once made and no longer wants (the shared client's,
	// while application users are declared): deleted where they exist, after Admins and Users
	// are complete. Never root.
	Retired []string
}

// User is an application's etcd user, limited to key prefixes.
type User struct {
	Name      string
	ReadWrite []string
	ReadOnly  []string
}

type perm struct {
	key, end string
	typ      authpb.Permission_Type
}

func (p perm) String() string {
	t := "read"
	if p.typ == authpb.READWRITE {
		t = "readwrite"
	}
	return fmt.Sprintf("%s %q", t, p.key)
}

// wanted is the permissions of u: a prefix both read-write and read-only is read-write.
func (u User) wanted() []perm {
	var out []perm
	for _, p := range u.ReadWrite {
		out = append(out, perm{p, clientv3.GetPrefixRangeEnd(p), authpb.READWRITE})
	}
	for _, p := range u.ReadOnly {
		if !slices.Contains(u.ReadWrite, p) {
			out = append(out, perm{p, clientv3.GetPrefixRangeEnd(p), authpb.READ})
		}
	}
	return out
}

// ApplyAuth makes the cluster's users, roles and authentication match spec, one idempotent
// call at a time, and says what it changed. Users and roles are complete before authentication
// is turned on, so nobody the spec names is locked out at any moment; turning it off comes
// first when it goes. Users and roles it does not manage are left alone.
func ApplyAuth(ctx context.Context, a clientv3.Auth, spec AuthSpec) ([]string, error) {
	var changes []string
	did := func(format string, args ...any) { changes = append(changes, fmt.Sprintf(format, args...)) }
	st, err := a.AuthStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the authentication status: %w", err)
	}
	if !spec.Enabled && st.Enabled {
		if _, err := a.AuthDisable(ctx); err != nil {
			return changes, fmt.Errorf("disabling authentication: %w", err)
		}
		did("authentication disabled")
	}
	ul, err := a.UserList(ctx)
	if err != nil {
		return changes, fmt.Errorf("listing users: %w", err)
	}
	rl, err := a.RoleList(ctx)
	if err != nil {
		return changes, fmt.Errorf("listing roles: %w", err)
	}
	users, roles := ul.Users, rl.Roles
	var keep []User
	if spec.Enabled {
		keep = spec.Users
		admins := append([]string{"root"}, slices.DeleteFunc(slices.Clone(spec.Admins), func(s string) bool { return s == "root" })...)
		for _, name := range admins {
			if err := ensureUser(ctx, a, users, name, "root", did); err != nil {
				return changes, err
			}
		}
		for _, u := range spec.Users {
			if err := ensureRole(ctx, a, roles, RolePrefix+u.Name, u.wanted(), did); err != nil {
				return changes, err
			}
			if err := ensureUser(ctx, a, users, u.Name, RolePrefix+u.Name, did); err != nil {
				return changes, err
			}
		}
	}
	for _, name := range spec.Retired {
		if name == "root" || !slices.Contains(users, name) {
			continue
		}
		if _, err := a.UserDelete(ctx, name); err != nil {
			return changes, fmt.Errorf("deleting user %s: %w", name, err)
		}
		did("user %s deleted", name)
	}
	// Managed roles (and their users) that the spec no longer names go.
	for _, role := range roles {
		name, ok := strings.CutPrefix(role, RolePrefix)
		if !ok || slices.ContainsFunc(keep, func(u User) bool { return u.Name == name }) {
			continue
		}
		if slices.Contains(users, name) {
			if _, err := a.UserDelete(ctx, name); err != nil {
				return changes, fmt.Errorf("deleting user %s: %w", name, err)
			}
			did("user %s deleted", name)
		}
		if _, err := a.RoleDelete(ctx, role); err != nil {
			return changes, fmt.Errorf("deleting role %s: %w", role, err)
		}
		did("role %s deleted", role)
	}
	if spec.Enabled && !st.Enabled {
		if _, err := a.AuthEnable(ctx); err != nil {
			return changes, fmt.Errorf("enabling authentication: %w", err)
		}
		did("authentication enabled")
	}
	return changes, nil
}

// ensureUser makes user exist, without a password (it authenticates with its certificate's
// common name), with role among its roles.
func ensureUser(ctx context.Context, a clientv3.Auth, users []string, name, role string, did func(string, ...any)) error {
	if !slices.Contains(users, name) {
		if _, err := a.UserAddWithOptions(ctx, name, "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
			return fmt.Errorf("adding user %s: %w", name, err)
		}
		did("user %s added", name)
	} else {
		u, err := a.UserGet(ctx, name)
		if err != nil {
			return fmt.Errorf("reading user %s: %w", name, err)
		}
		if slices.Contains(u.Roles, role) {
			return nil
		}
	}
	if _, err := a.UserGrantRole(ctx, name, role); err != nil {
		return fmt.Errorf("granting role %s to user %s: %w", role, name, err)
	}
	did("user %s granted role %s", name, role)
	return nil
}

// ensureRole makes role exist with exactly the permissions want.
func ensureRole(ctx context.Context, a clientv3.Auth, roles []string, role string, want []perm, did func(string, ...any)) error {
	var have []perm
	if !slices.Contains(roles, role) {
		if _, err := a.RoleAdd(ctx, role); err != nil {
			return fmt.Errorf("adding role %s: %w", role, err)
		}
		did("role %s added", role)
	} else {
		r, err := a.RoleGet(ctx, role)
		if err != nil {
			return fmt.Errorf("reading role %s: %w", role, err)
		}
		for _, p := range r.Perm {
			have = append(have, perm{string(p.Key), string(p.RangeEnd), p.PermType})
		}
	}
	for _, p := range have {
		if !slices.Contains(want, p) {
			if _, err := a.RoleRevokePermission(ctx, role, p.key, p.end); err != nil {
				return fmt.Errorf("revoking %s from role %s: %w", p, role, err)
			}
			did("role %s: revoked %s", role, p)
		}
	}
	sort.Slice(want, func(i, j int) bool { return want[i].key < want[j].key })
	for _, p := range want {
		if slices.Contains(have, p) {
			continue
		}
		if _, err := a.RoleGrantPermission(ctx, role, p.key, p.end, clientv3.PermissionType(p.typ)); err != nil {
			return fmt.Errorf("granting %s to role %s: %w", p, role, err)
		}
		did("role %s: granted %s", role, p)
	}
	return nil
}
