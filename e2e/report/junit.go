package report

import (
	"encoding/xml"
	"fmt"
	"strings"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit renders one test case per scenario and checker (and client profile, when the run
// named them: "availability [service-only]").
func (r *Report) JUnit() []byte {
	return junitOf([]*Report{r})
}

func junitOf(reports []*Report) []byte {
	var all junitSuites
	for _, r := range reports {
		suite := junitSuite{Name: "quorate-conformance/" + r.K8sVersion}
		for _, s := range r.Scenarios {
			class := "conformance." + s.Name
			if s.Result() == ResultSkipped {
				suite.Cases = append(suite.Cases, junitCase{Name: "run", Classname: class,
					Skipped: &junitSkipped{Message: "a prerequisite is missing: " + strings.Join(s.Skipped, "; ")}})
				continue
			}
			if s.Error != "" {
				suite.Cases = append(suite.Cases, junitCase{Name: "run", Classname: class, Time: s.Duration.Seconds(),
					Failure: &junitFailure{Message: "scenario did not complete", Text: s.Error}})
			}
			for _, p := range s.Profiles() {
				ps := s.ForProfile(p)
				for _, v := range ps.Verdicts {
					name := string(v.Checker)
					if ps.Profile != "" {
						name += " [" + ps.Profile + "]"
					}
					c := junitCase{Name: name, Classname: class, Time: s.Duration.Seconds(), SystemOut: v.Reason + "\n" + strings.Join(v.Details, "\n")}
					cell := verdictCell(ps, v.Checker)
					if cell != "pass" && cell != "fail (expected)" {
						c.Failure = &junitFailure{Message: fmt.Sprintf("%s: %s", cell, v.Reason), Text: strings.Join(v.Details, "\n")}
					}
					suite.Cases = append(suite.Cases, c)
				}
			}
			suite.Time += s.Duration.Seconds()
		}
		for _, c := range suite.Cases {
			suite.Tests++
			if c.Failure != nil {
				suite.Failures++
			}
			if c.Skipped != nil {
				suite.Skipped++
			}
		}
		all.Suites = append(all.Suites, suite)
	}
	b, _ := xml.MarshalIndent(all, "", "  ")
	return append([]byte(xml.Header), b...)
}
