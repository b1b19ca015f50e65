package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ResultKind says which step a backup pod's result is about.
type ResultKind string

const (
	// ResultStored: a snapshot was taken, stored and read back verified.
	ResultStored ResultKind = "Stored"
	// ResultVerified: a restored cluster was compared with what its backup recorded (a
	// restore drill); Matches says whether it held the same keyspace.
	ResultVerified ResultKind = "Verified"
	// ResultListed: the snapshots under a prefix (Objects).
	ResultListed ResultKind = "Listed"
	// ResultKeyspace: a cluster's keyspace at a revision (Info.Keyspace), read by
	// `quorate-backup keyspace`.
	ResultKeyspace ResultKind = "Keyspace"
	// ResultFailed: the step failed; Error says why and what to do.
	ResultFailed ResultKind = "Failed"
)

// Result is what a backup pod reports to the operator, as its termination message: the
// kubelet keeps it in the pod's status, where the operator reads it with ParseResult.
type Result struct {
	Kind ResultKind `json:"kind"`
	// Stored: the member the snapshot was taken from, where it went, and what it holds.
	Member   string `json:"member,omitempty"`
	Location string `json:"location,omitempty"`
	Key      string `json:"key,omitempty"`
	Info     *Info  `json:"info,omitempty"`
	// Expired are the keys of the schedule's objects that retention deleted.
	Expired []string `json:"expired,omitempty"`
	// ExpiredCount is how many there were (Expired is shortened to fit the message).
	ExpiredCount int `json:"expiredCount,omitempty"`
	// PrunedSegments is how many archive segments retention deleted, none of the snapshots
	// left needing them.
	PrunedSegments int `json:"prunedSegments,omitempty"`
	// RetentionError says what of the retention failed, after the snapshot was stored: the
	// backup is good, and the next one tries the retention again.
	RetentionError string `json:"retentionError,omitempty"`
	// Objects are the keys a listing found.
	Objects []string `json:"objects,omitempty"`
	// Leases: with Keyspace, how many leases the cluster has when it is read (whatever the
	// revision asked: a lease is not versioned).
	Leases int64 `json:"leases,omitempty"`
	// Verified: whether the restored keyspace matched, and what was compared.
	Matches bool   `json:"matches,omitempty"`
	Message string `json:"message,omitempty"`
	// Failed: the error, and its cause when it is one a store gave: one of
	// v1alpha1.StoreReasons (empty for other causes), the reason of the EtcdBackup's condition.
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// resultPrefix marks a termination message as a backup Result.
const resultPrefix = "quorate-backup-result: "

// maxTermination is the most the kubelet keeps of a termination message.
const maxTermination = 4096

// Encode renders the result as a termination message, within the kubelet's 4096 bytes:
// the list of expired keys, then the message and error, are shortened first.
func (r Result) Encode() string {
	for {
		b, err := json.Marshal(r)
		if err != nil {
			return resultPrefix + `{"kind":"Failed","error":"encoding the result: ` + err.Error() + `"}`
		}
		if len(b)+len(resultPrefix) <= maxTermination {
			return resultPrefix + string(b)
		}
		switch {
		case len(r.Expired) > 0:
			r.Expired = r.Expired[:len(r.Expired)/2]
		case len(r.Objects) > 0:
			r.Objects = r.Objects[:len(r.Objects)/2]
		case len(r.RetentionError) > 1000:
			r.RetentionError = r.RetentionError[:1000] + "…"
		case len(r.Error) > 1000:
			r.Error = r.Error[:1000] + "…"
		case len(r.Message) > 1000:
			r.Message = r.Message[:1000] + "…"
		default:
			return resultPrefix + `{"kind":"Failed","error":"the result does not fit in a termination message"}`
		}
	}
}

// ErrNoResult: the message is not a backup result (the pod ended before it wrote one).
var ErrNoResult = errors.New("no backup result in the termination message")

// ParseResult reads a Result back from a termination message.
func ParseResult(msg string) (*Result, error) {
	body, ok := strings.CutPrefix(strings.TrimSpace(msg), resultPrefix)
	if !ok {
		return nil, ErrNoResult
	}
	r := &Result{}
	if err := json.Unmarshal([]byte(body), r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoResult, err)
	}
	switch r.Kind {
	case ResultStored, ResultVerified, ResultListed, ResultKeyspace, ResultFailed:
		return r, nil
	}
	return nil, fmt.Errorf("%w: unknown kind %q", ErrNoResult, r.Kind)
}

// WriteResult writes the result where the kubelet reads the termination message.
func WriteResult(path string, r Result) error {
	return os.WriteFile(path, []byte(r.Encode()), 0o644) //nolint:gosec // the kubelet reads it; it holds no secret
}
