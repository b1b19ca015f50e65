package backup

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Retention says which of a schedule's backups are kept. Count keeps the newest Count;
// Hourly, Daily and Weekly keep the newest backup of each of the last that many hours, days
// and ISO weeks (UTC) that have one (grandfather-father-son). When any of these four is set,
// a backup none of them keeps goes; when none is, they do not limit. MaxAge deletes every
// backup older than it, whatever the others keep. The newest backup is always kept. The zero
// value keeps everything.
type Retention struct {
	Count  int
	Hourly int
	Daily  int
	Weekly int
	MaxAge time.Duration
}

// limits says whether a backup has to be kept by Count or a period to stay.
func (r Retention) limits() bool {
	return r.Count > 0 || r.Hourly > 0 || r.Daily > 0 || r.Weekly > 0
}

// period is a grandfather-father-son generation: how many of its periods keep a backup, and
// which period a time falls in.
type period struct {
	keep   int
	bucket func(time.Time) string
}

func (r Retention) periods() []period {
	return []period{
		{r.Hourly, func(t time.Time) string { return t.UTC().Format("2006010215") }},
		{r.Daily, func(t time.Time) string { return t.UTC().Format("20060102") }},
		{r.Weekly, func(t time.Time) string { y, w := t.UTC().ISOWeek(); return fmt.Sprintf("%d-%02d", y, w) }},
	}
}

// Expired returns which of the objects (name -> time) the retention deletes, oldest first.
func (r Retention) Expired(objects map[string]time.Time, now time.Time) []string {
	if !r.limits() && r.MaxAge <= 0 {
		return nil
	}
	names := make([]string, 0, len(objects))
	for n := range objects {
		names = append(names, n)
	}
	// Newest first; ties by name, so the order is stable.
	sort.Slice(names, func(i, j int) bool {
		ti, tj := objects[names[i]], objects[names[j]]
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return names[i] > names[j]
	})
	kept := make([]bool, len(names))
	for i := range names {
		kept[i] = i < r.Count
	}
	for _, p := range r.periods() {
		last, n := "", 0
		for i, name := range names {
			if n >= p.keep {
				break
			}
			// Newest first: the first backup of a period is its newest.
			if b := p.bucket(objects[name]); b != last {
				last, n, kept[i] = b, n+1, true
			}
		}
	}
	var out []string
	for i, n := range names {
		if i == 0 {
			continue
		}
		byLimit := r.limits() && !kept[i]
		byAge := r.MaxAge > 0 && now.Sub(objects[n]) > r.MaxAge
		if byLimit || byAge {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return objects[out[i]].Before(objects[out[j]]) })
	return out
}

// String says what the retention keeps, for Events and logs.
func (r Retention) String() string {
	var parts []string
	for _, f := range []struct {
		name string
		n    int
	}{{"maxCount", r.Count}, {"hourly", r.Hourly}, {"daily", r.Daily}, {"weekly", r.Weekly}} {
		if f.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f.name, f.n))
		}
	}
	if r.MaxAge > 0 {
		parts = append(parts, "maxAge "+r.MaxAge.String())
	}
	if len(parts) == 0 {
		return "no limit"
	}
	return strings.Join(parts, ", ")
}

// ScheduledTime is the time in the name of a schedule's backup (<schedule>-<time>) or in its
// key (.../<schedule>-<time>.db), which is the time the schedule took it for; ok is false for
// a name that does not end with such a time.
func ScheduledTime(name string) (time.Time, bool) {
	name = strings.TrimSuffix(name, ".db")
	n := len(ScheduleTimeFormat)
	if len(name) <= n || name[len(name)-n-1] != '-' {
		return time.Time{}, false
	}
	t, err := time.Parse(ScheduleTimeFormat, name[len(name)-n:])
	return t, err == nil
}
