// Package corpus holds recorded histories of real conformance runs, compressed, with the
// verdicts every checker must reach on them (testdata/corpus.json): passing runs, runs with
// real outages the scenario expected, a run judged against the wrong budget, and the same
// passing run with the effect of real bug classes injected. `go test ./e2e/checker/corpus`
// judges them all; `-update` rewrites the verdicts for review when a checker is meant to change.
package corpus
