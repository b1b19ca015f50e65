package cronspec

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec, err string
	}{
		{spec: "0 */6 * * *"},
		{spec: "@hourly"},
		{spec: "@every 30m"},
		{spec: "@every 1m"},
		{spec: "*/5 * * * *"},
		{spec: "@every 1s", err: "has runs 1s apart, closer than the shortest interval allowed (1m0s)"},
		{spec: "@every 0s", err: "has runs 1s apart, closer than the shortest interval allowed (1m0s)"}, // cron rounds it up to 1s
		{spec: "0,1 * * * *", err: ""},
		{spec: "TZ=UTC", err: `names a time zone and no times: write the five cron fields after it, such as "CRON_TZ=Europe/Berlin 0 3 * * *"`},
		{spec: "CRON_TZ=Europe/Paris", err: `names a time zone and no times: write the five cron fields after it, such as "CRON_TZ=Europe/Berlin 0 3 * * *"`},
		{spec: "CRON_TZ=Europe/Paris 0 * * * *"},
		{spec: "TZ=UTC 0 3 * * *"},
		{spec: "CRON_TZ=Mars/Olympus 0 * * * *", err: "does not parse (provided bad location Mars/Olympus: unknown time zone Mars/Olympus)"},
		{spec: "0 * * *", err: "does not parse (expected exactly 5 fields, found 4: [0 * * *])"},
		{spec: "@sometimes", err: "does not parse (unrecognized descriptor: @sometimes)"},
		{spec: "0 3 30 2 *", err: "matches no date (such as the 30th of February): it would never run"},
		{spec: "0 3 31 4,6 *", err: "matches no date (such as the 30th of February): it would never run"},
		{spec: "0 3 29 2 *"}, // leap years
	} {
		_, err := Parse(tc.spec, time.Minute)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("Parse(%q) = %q, want %q", tc.spec, got, tc.err)
		}
	}
}

func TestShortest(t *testing.T) {
	for spec, want := range map[string]time.Duration{
		"0,1 * * * *": time.Minute,
		"@every 90s":  90 * time.Second,
		"0 */6 * * *": 6 * time.Hour,
		"@daily":      24 * time.Hour,
		"5 0 1 * *":   28 * 24 * time.Hour, // monthly: the shortest month, not the wait for the first run
	} {
		s, err := Parse(spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := Shortest(s); got != want {
			t.Errorf("Shortest(%q) = %s, want %s", spec, got, want)
		}
	}
}

// Whatever a user writes, Parse neither panics nor accepts a schedule that never runs or runs
// closer than the minimum.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"0 */6 * * *", "@every 30m", "TZ=UTC", "CRON_TZ=Europe/Paris 0 * * * *", "0 3 30 2 *", "@every 1s", "*/0 * * * *", "0 0 * * 7-1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec, time.Minute)
		if err != nil {
			return
		}
		if s.Next(probeStart).IsZero() {
			t.Fatalf("Parse(%q) accepted a schedule that never runs", spec)
		}
		if got := Shortest(s); got < time.Minute {
			t.Fatalf("Parse(%q) accepted runs %s apart", spec, got)
		}
	})
}
