// Package cronspec parses the schedules of EtcdBackupSchedules and of defragmentation: five cron
// fields or a descriptor (@hourly, @every 30m), in UTC or after a CRON_TZ=<zone> prefix, run no
// more often than a minimum interval, and never a panic of the parser.
package cronspec

import (
	"errors"
	"fmt"
	"strings"
	"time"

	_ "time/tzdata" // CRON_TZ=<zone> schedules in an image with no zoneinfo of its own

	"github.com/robfig/cron/v3"
)

// probes is how many runs after a fixed time are looked at to find a schedule's shortest
// interval: enough to see every gap of an expression such as "0,1 * * * *" within an hour.
const probes = 120

// ErrNeverRuns: the schedule matches no date.
var ErrNeverRuns = errors.New("matches no date (such as the 30th of February): it would never run")

// probeStart is the fixed time the probes start from.
var probeStart = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Parse returns the schedule spec names, or why it cannot be run: it does not parse, it names a
// time zone and no times (robfig/cron panics on a bare "TZ=" or "CRON_TZ=" prefix), it matches
// no date (robfig/cron would silently never run it), or two of
// its runs come closer together than min (0: no minimum). A schedule runs in UTC unless it
// starts with CRON_TZ=<zone> (or TZ=<zone>) and its fields.
func Parse(spec string, min time.Duration) (s cron.Schedule, err error) {
	spec = strings.TrimSpace(spec)
	if (strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=")) && !strings.ContainsAny(spec, " \t") {
		return nil, fmt.Errorf("names a time zone and no times: write the five cron fields after it, such as \"CRON_TZ=Europe/Berlin 0 3 * * *\"")
	}
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("does not parse (%v)", r)
		}
	}()
	s, err = cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("does not parse (%w)", err)
	}
	if s.Next(probeStart).IsZero() {
		// robfig/cron looks five years ahead and gives up: the schedule would never run.
		return nil, ErrNeverRuns
	}
	if shortest := Shortest(s); shortest < min {
		return nil, fmt.Errorf("has runs %s apart, closer than the shortest interval allowed (%s)", shortest, min)
	}
	return s, nil
}

// Shortest is the shortest time between two consecutive runs of s over its next probes runs
// after a fixed time.
func Shortest(s cron.Schedule) time.Duration {
	// From the first run: the time before it is no interval between runs.
	t := s.Next(probeStart)
	shortest := time.Duration(1<<63 - 1)
	if t.IsZero() {
		return shortest
	}
	for range probes {
		next := s.Next(t)
		if next.IsZero() {
			break
		}
		shortest = min(shortest, next.Sub(t))
		t = next
	}
	return shortest
}
