package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// scorecardResult and scorecardStatus are operator-sdk scorecard's v1alpha3 TestStatus, the
// JSON a custom scorecard test prints on stdout.
type scorecardResult struct {
	Name   string   `json:"name"`
	Log    string   `json:"log,omitempty"`
	State  string   `json:"state"`
	Errors []string `json:"errors,omitempty"`
}

type scorecardStatus struct {
	Results []scorecardResult `json:"results"`
}

// WriteScorecard prints the report as a scorecard v1alpha3 TestStatus: one result per scenario,
// "pass" when every checker reached its expected verdict, "fail" with the reasons otherwise,
// "error" naming the missing prerequisites for a scenario that was skipped.
func (r *Report) WriteScorecard(w io.Writer) error {
	st := scorecardStatus{Results: []scorecardResult{}}
	for _, s := range r.Scenarios {
		res := scorecardResult{Name: "quorate-" + s.Name, State: "pass"}
		var log []string
		for _, p := range s.Profiles() {
			for _, v := range p.Verdicts {
				log = append(log, profileText(p.Profile, v.String()))
			}
		}
		res.Log = strings.Join(log, "\n")
		if s.Result() == ResultSkipped {
			// Not run: neither a pass nor the operator's failure.
			res.State, res.Errors = "error", append([]string{"skipped: a prerequisite is missing"}, s.Skipped...)
			st.Results = append(st.Results, res)
			continue
		}
		if !s.Passed() {
			res.State = "fail"
			if s.Error != "" {
				res.Errors = append(res.Errors, s.Error)
			}
			for _, p := range s.Profiles() {
				for _, v := range p.Verdicts {
					if want := s.Expect(v.Checker); !want.Met(v) {
						res.Errors = append(res.Errors, profileText(p.Profile, fmt.Sprintf("%s: %s (expected %s)", v.Checker, v.Reason, want)))
					}
				}
			}
		}
		st.Results = append(st.Results, res)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(st)
}

// profileText puts the client profile before text, when the run named one.
func profileText(profile, text string) string {
	if profile == "" {
		return text
	}
	return "[" + profile + "] " + text
}
