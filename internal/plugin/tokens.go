package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/quorate-dev/quorate/api/v1alpha1"
)

// pausePatch is the merge patch that sets spec.paused.
func pausePatch(paused bool) []byte {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"paused": paused}})
	return b
}

// renewPatch is the merge patch that asks for a renewal of every generated leaf certificate.
func renewPatch(token string) []byte {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"tls": map[string]any{"renewCertificates": token}}})
	return b
}

// Token is a fresh token for a token field: the time, which tells the user when it was asked
// for and matches the fields' pattern.
func Token(prefix string, now time.Time) string {
	return prefix + "-" + now.UTC().Format("20060102-150405")
}

// pauseState says whether the operator acted on spec.paused of generation gen: it observed
// the generation and its Progressing condition says Paused (paused) or no longer does.
func pauseState(c *v1alpha1.EtcdCluster, gen int64, paused bool) (bool, string) {
	p := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionProgressing)
	if c.Status.ObservedGeneration < gen || p == nil || p.ObservedGeneration < gen {
		return false, fmt.Sprintf("waiting for the operator to observe generation %d (status describes %d)", gen, c.Status.ObservedGeneration)
	}
	isPaused := p.Reason == v1alpha1.ReasonPaused
	if isPaused == paused {
		return true, fmt.Sprintf("Progressing=%s %s: %s", p.Status, p.Reason, p.Message)
	}
	return false, fmt.Sprintf("Progressing=%s %s: %s", p.Status, p.Reason, p.Message)
}

// renewState says whether the operator acted on the renewal token.
func renewState(c *v1alpha1.EtcdCluster, token string) (bool, string) {
	if c.Status.TLS != nil && c.Status.TLS.RenewedToken == token {
		msg := "every generated leaf certificate was renewed"
		if fe := c.Status.TLS.FirstExpiry; fe != nil {
			msg += fmt.Sprintf("; the first to expire now is %s at %s", fe.Secret, fe.Time.UTC().Format(time.RFC3339))
		}
		return true, msg
	}
	if c.Spec.Paused {
		return false, "the cluster is paused (spec.paused): the operator renews the certificates once it is resumed"
	}
	return false, "waiting for the operator to renew the certificates (status.tls.renewedToken)"
}

// SetPaused pauses or resumes a cluster through spec.paused and waits until the operator
// says so in its Progressing condition.
func (e *Env) SetPaused(ctx context.Context, name string, paused bool, timeout time.Duration) error {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	verb := map[bool]string{true: "pausing", false: "resuming"}[paused]
	if err := e.setSwitch(ctx, c, timeout, verb, fmt.Sprintf("spec.paused=%t", paused), pausePatch(paused), func(gen int64) (bool, string) {
		return pauseState(c, gen, paused)
	}); err != nil {
		return err
	}
	if paused {
		fmt.Fprintf(e.Out, "%s is paused: the operator makes no changes to it until `kubectl quorate resume %s`\n", name, name)
	} else {
		fmt.Fprintf(e.Out, "%s is resumed: the operator manages it again\n", name)
	}
	return nil
}

// setSwitch merge-patches a switch of c's spec (what says which, for the progress line) and
// waits until done says the operator acted on the generation the patch made, showing its
// progress; c is read again on each try.
func (e *Env) setSwitch(ctx context.Context, c *v1alpha1.EtcdCluster, timeout time.Duration, verb, what string, patch []byte, done func(gen int64) (bool, string)) error {
	if err := e.Client.Patch(ctx, c, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("%s EtcdCluster %s: %w", verb, c.Name, err)
	}
	gen := c.Generation
	fmt.Fprintf(e.Err, "%s %s/%s (%s, generation %d)\n", verb, e.Namespace, c.Name, what, gen)
	return e.waitFor(ctx, timeout, verb+" "+c.Name, func(ctx context.Context) (bool, string, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, "", err
		}
		ok, progress := done(gen)
		return ok, progress, nil
	})
}

// errCustomCerts: renewCertificates acts on generated certificates only (the CRD refuses it
// otherwise); the plugin says so before asking.
var errCustomCerts = errors.New("the cluster uses its own certificate Secrets (spec.tls.serverSecretName) or no TLS: the operator renews only the certificates it generates; replace the certificates in your Secrets yourself")

// RenewCertificates sets a new spec.tls.renewCertificates token and waits until the operator
// recorded it as renewed.
func (e *Env) RenewCertificates(ctx context.Context, name, token string, timeout time.Duration) error {
	c, err := e.cluster(ctx, name)
	if err != nil {
		return err
	}
	if !c.Spec.TLS.IsEnabled() || c.Spec.TLS.UserProvided() {
		return errCustomCerts
	}
	if token == "" {
		token = Token("renew", e.Now())
	}
	if c.Spec.TLS.RenewCertificates == token {
		return fmt.Errorf("spec.tls.renewCertificates is %q already: choose another token", token)
	}
	if err := e.Client.Patch(ctx, c, client.RawPatch(types.MergePatchType, renewPatch(token))); err != nil {
		return fmt.Errorf("asking for a renewal of %s's certificates: %w", name, err)
	}
	fmt.Fprintf(e.Err, "asked for a renewal of %s/%s's certificates (spec.tls.renewCertificates=%s)\n", e.Namespace, name, token)
	var msg string
	err = e.waitFor(ctx, timeout, "renewing "+name+"'s certificates", func(ctx context.Context) (bool, string, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, "", err
		}
		done, progress := renewState(c, token)
		msg = progress
		return done, progress, nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Out, msg)
	return nil
}
