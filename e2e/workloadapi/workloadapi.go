// Package workloadapi is the HTTP API of the workload (cmd/quorate-workload serves it): its
// routes, and a typed client over a transport the caller gives (the suite reaches the
// workload through the API server's pod proxy).
package workloadapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/quorate-dev/quorate/e2e/history"
	"github.com/quorate-dev/quorate/e2e/workload"
)

// Port is the port the workload serves its API on.
const Port = 8080

// FsyncProbeFlag, the workload binary's first argument (--fsync-probe-dir=DIR), runs the disk
// check of internal/diskcheck on DIR instead of the workload, and writes its result line
// (diskcheck.Result.Encode) to stdout and the termination message: the suite's fsync probe. A
// flag, not a word, so that a workload binary older than the probe refuses it at once.
const FsyncProbeFlag = "fsync-probe-dir"

// Route is one endpoint of the API.
type Route struct {
	Method string
	// Path is the route's path, without its leading slash (as the pod proxy's suffix).
	Path string
}

// Pattern is the route as a net/http ServeMux pattern ("POST /start").
func (r Route) Pattern() string { return r.Method + " /" + r.Path }

// URLPath is the route's path with its leading slash ("/healthz").
func (r Route) URLPath() string { return "/" + r.Path }

// The workload's routes.
var (
	// Healthz answers ok once the workload serves (the pod's readiness probe).
	Healthz = Route{"GET", "healthz"}
	// Start starts the load and its history.
	Start = Route{"POST", "start"}
	// Stop stops the load.
	Stop = Route{"POST", "stop"}
	// History returns the load's history (history.History) with the poller's samples: the
	// first client profile's, or ProfileParam's; when the workload runs several profiles, the
	// history names its own (history.History.Profile).
	History = Route{"GET", "history"}
	// Final reads the cluster's final state (history.Final) under the first client profile's
	// keys, or ProfileParam's.
	Final = Route{"POST", "final"}
	// Fill writes large values outside the load's keys (query mib: at most that many MiB).
	Fill = Route{"POST", "fill"}
	// Unfill deletes what Fill wrote and compacts.
	Unfill = Route{"POST", "unfill"}
	// Probe writes one key outside the history (query key) and returns etcd's error.
	Probe = Route{"POST", "probe"}
	// Lease grants a lease (query ttl, in seconds), puts keys on it outside the history
	// (query keys: how many) and keeps it alive (workload.Runner.Lease).
	Lease = Route{"POST", "lease"}
	// Revoke revokes a lease Lease granted (query id).
	Revoke = Route{"POST", "revoke"}
	// TLS returns every state of the workload's mounted certificate files.
	TLS = Route{"GET", "tls"}
	// Stats returns the load's counts so far.
	Stats = Route{"GET", "stats"}
)

// ProfileParam is the query parameter of History and Final that names the client profile
// (workload.Profile) whose history or keys they answer for; without it, the first profile the
// workload runs (its --profiles). Start, Stop and Stats act on every profile; Fill, Unfill,
// Probe, Lease and Revoke on the first.
const ProfileParam = "profile"

// Transport sends one request to the workload and returns the body of its answer; path is the
// route's path with its query, if any ("fill?mib=64").
type Transport func(ctx context.Context, method, path string) ([]byte, error)

// Client calls the workload's API.
type Client struct {
	Transport Transport
}

// call sends the request and decodes the answer into out (unless nil). Its errors name the
// method and the path with its query.
func (c Client) call(ctx context.Context, r Route, query url.Values, out any) error {
	path := r.Path
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	body, err := c.Transport(ctx, r.Method, path)
	if err != nil {
		return fmt.Errorf("workload %s %s: %w", r.Method, path, err)
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	return nil
}

// Start starts the load.
func (c Client) Start(ctx context.Context) error { return c.call(ctx, Start, nil, nil) }

// Stop stops the load.
func (c Client) Stop(ctx context.Context) error { return c.call(ctx, Stop, nil, nil) }

// History returns the load's history (the first profile's).
func (c Client) History(ctx context.Context) (history.History, error) { return c.HistoryOf(ctx, "") }

// HistoryOf returns the history of the load of profile p ("": the first profile).
func (c Client) HistoryOf(ctx context.Context, p workload.Profile) (history.History, error) {
	var h history.History
	err := c.call(ctx, History, profileQuery(p), &h)
	return h, err
}

// Final reads the cluster's final state (under the first profile's keys).
func (c Client) Final(ctx context.Context) (history.Final, error) { return c.FinalOf(ctx, "") }

// FinalOf reads the cluster's final state under the keys of profile p ("": the first).
func (c Client) FinalOf(ctx context.Context, p workload.Profile) (history.Final, error) {
	var f history.Final
	err := c.call(ctx, Final, profileQuery(p), &f)
	return f, err
}

func profileQuery(p workload.Profile) url.Values {
	if p == "" {
		return nil
	}
	return url.Values{ProfileParam: {string(p)}}
}

// Fill writes large values until the cluster refuses a write, at most mib MiB.
func (c Client) Fill(ctx context.Context, mib int) (workload.FillResult, error) {
	var res workload.FillResult
	err := c.call(ctx, Fill, url.Values{"mib": {strconv.Itoa(mib)}}, &res)
	return res, err
}

// Unfill deletes what Fill wrote and compacts up to the deletion.
func (c Client) Unfill(ctx context.Context) (workload.UnfillResult, error) {
	var res workload.UnfillResult
	err := c.call(ctx, Unfill, nil, &res)
	return res, err
}

// ProbeResult is the answer to Probe.
type ProbeResult struct {
	// Error is etcd's error ("" when the write went through).
	Error string `json:"error"`
}

// Probe writes key outside the history.
func (c Client) Probe(ctx context.Context, key string) (ProbeResult, error) {
	var res ProbeResult
	err := c.call(ctx, Probe, url.Values{"key": {key}}, &res)
	return res, err
}

// Lease has the workload grant a lease of ttl seconds, put n keys on it outside its history,
// and keep it alive.
func (c Client) Lease(ctx context.Context, ttl int64, n int) (workload.LeaseResult, error) {
	var res workload.LeaseResult
	err := c.call(ctx, Lease, url.Values{"ttl": {strconv.FormatInt(ttl, 10)}, "keys": {strconv.Itoa(n)}}, &res)
	return res, err
}

// Revoke has the workload revoke lease id, which Lease granted.
func (c Client) Revoke(ctx context.Context, id int64) (workload.LeaseResult, error) {
	var res workload.LeaseResult
	err := c.call(ctx, Revoke, url.Values{"id": {strconv.FormatInt(id, 10)}}, &res)
	return res, err
}

// TLSChange is one state of the workload's mounted certificate files.
type TLSChange struct {
	Time   int64    `json:"time"`
	CAs    []string `json:"cas"`
	Issuer string   `json:"issuer"`
	Serial string   `json:"serial"`
}

// TLSChanges returns every state of the workload's certificate files, the first one included.
func (c Client) TLSChanges(ctx context.Context) ([]TLSChange, error) {
	var out []TLSChange
	err := c.call(ctx, TLS, nil, &out)
	return out, err
}

// Counts are the load's counts so far, over every profile.
type Counts struct {
	OK      int `json:"ok"`
	Fail    int `json:"fail"`
	Unknown int `json:"unknown"`
	Samples int `json:"samples"`
	// Profiles are each profile's counts, when the workload runs more than one.
	Profiles []ProfileCounts `json:"profiles,omitempty"`
}

// ProfileCounts are one client profile's counts so far.
type ProfileCounts struct {
	Profile workload.Profile `json:"profile"`
	OK      int              `json:"ok"`
	Fail    int              `json:"fail"`
	Unknown int              `json:"unknown"`
}

// Stats returns the load's counts so far.
func (c Client) Stats(ctx context.Context) (Counts, error) {
	var st Counts
	err := c.call(ctx, Stats, nil, &st)
	return st, err
}
