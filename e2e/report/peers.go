package report

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/quorate-dev/quorate/e2e/label"
)

// PeerCell is one operator's result for one operation of the side-by-side benchmark
// (suite=peers).
type PeerCell struct {
	Operator   string        `json:"operator"`
	LongestGap time.Duration `json:"longestGap"`
	// Writes is whether any write was acknowledged (LongestGap is meaningless without).
	Writes              bool     `json:"writes"`
	OK, Failed, Unknown int      `json:"-"`
	Timings             []Timing `json:"timings"`
	// Verdicts: "all pass", or each checker that did not pass with its status and code.
	Verdicts string `json:"verdicts"`
	Error    string `json:"error,omitempty"`
}

// PeerRow is one operation, Quorate's cell first.
type PeerRow struct {
	Operation string     `json:"operation"`
	Cells     []PeerCell `json:"cells"`
}

// Peers groups the benchmark's scenarios by operation (in the order they ran) and operator
// (Quorate first, then in the order they ran). When an operator ran an operation twice (a
// later run's scenarios appended to the report), the later result replaces the earlier.
func Peers(r *Report) (rows []PeerRow, operators []string) {
	idx := map[string]int{}
	for _, s := range r.Scenarios {
		if s.Labels[label.Suite] != label.SuitePeers {
			continue
		}
		op, operator := s.Labels[label.Operation], s.Labels[label.Operator]
		if !slices.Contains(operators, operator) {
			operators = append(operators, operator)
		}
		i, ok := idx[op]
		if !ok {
			i = len(rows)
			idx[op] = i
			rows = append(rows, PeerRow{Operation: op})
		}
		cell := peerCell(s, operator)
		if j := slices.IndexFunc(rows[i].Cells, func(c PeerCell) bool { return c.Operator == operator }); j >= 0 {
			rows[i].Cells[j] = cell
		} else {
			rows[i].Cells = append(rows[i].Cells, cell)
		}
	}
	// Quorate first.
	slices.SortStableFunc(operators, func(a, b string) int { return boolInt(b == "quorate") - boolInt(a == "quorate") })
	for i := range rows {
		slices.SortStableFunc(rows[i].Cells, func(a, b PeerCell) int {
			return slices.Index(operators, a.Operator) - slices.Index(operators, b.Operator)
		})
	}
	return rows, operators
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func peerCell(s Scenario, operator string) PeerCell {
	c := PeerCell{Operator: operator, LongestGap: s.Stats.MaxWriteGap, Writes: s.Stats.OK > 0 && len(s.Verdicts) > 0,
		OK: s.Stats.OK, Failed: s.Stats.Fail, Unknown: s.Stats.Unknown, Timings: s.Timings, Error: s.Error}
	var bad []string
	for _, v := range s.Verdicts {
		if !v.Passed() {
			bad = append(bad, fmt.Sprintf("%s %s [%s]", v.Checker, v.Status, v.Code))
		}
	}
	switch {
	case len(s.Verdicts) == 0:
		c.Verdicts = "not judged"
	case len(bad) == 0:
		c.Verdicts = "all pass"
	default:
		c.Verdicts = strings.Join(bad, "; ")
	}
	return c
}

// ratio renders v against Quorate's q: "×2.50".
func ratio(v, q float64) string {
	if q <= 0 || v <= 0 {
		return ""
	}
	return fmt.Sprintf(" (×%.2f)", v/q)
}

func (c PeerCell) timing(name string) (Timing, bool) {
	for _, t := range c.Timings {
		if t.Name == name {
			return t, true
		}
	}
	return Timing{}, false
}

// PeersMarkdown renders one table per operation: a row per measure, a column per operator,
// each peer's figure with its ratio to Quorate's.
func PeersMarkdown(r *Report, rows []PeerRow, operators []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Side by side\n\nKubernetes %s, Quorate %s, generated %s. One run, one local cluster; the same workload and checkers for every operator.\n",
		r.K8sVersion, r.Quorate, r.Generated.UTC().Format(time.RFC3339))
	for _, row := range rows {
		fmt.Fprintf(&b, "\n## %s\n\n| | %s |\n|---|%s\n", row.Operation, strings.Join(operators, " | "), strings.Repeat("---|", len(operators)))
		var q *PeerCell
		if len(row.Cells) > 0 && row.Cells[0].Operator == "quorate" {
			q = &row.Cells[0]
		}
		line := func(name string, cell func(c PeerCell) string) {
			fmt.Fprintf(&b, "| %s |", name)
			for _, op := range operators {
				i := slices.IndexFunc(row.Cells, func(c PeerCell) bool { return c.Operator == op })
				if i < 0 {
					b.WriteString(" not run |")
					continue
				}
				fmt.Fprintf(&b, " %s |", cell(row.Cells[i]))
			}
			b.WriteString("\n")
		}
		line("longest write gap", func(c PeerCell) string {
			if !c.Writes {
				return "no write acknowledged"
			}
			s := ms(c.LongestGap)
			if q != nil && q.Writes && c.Operator != "quorate" {
				s += ratio(c.LongestGap.Seconds(), q.LongestGap.Seconds())
			}
			return s
		})
		line("operations ok / failed / unknown", func(c PeerCell) string { return fmt.Sprintf("%d / %d / %d", c.OK, c.Failed, c.Unknown) })
		var names []string
		for _, c := range row.Cells {
			for _, t := range c.Timings {
				if !slices.Contains(names, t.Name) {
					names = append(names, t.Name)
				}
			}
		}
		for _, n := range names {
			line(n, func(c PeerCell) string {
				t, ok := c.timing(n)
				switch {
				case !ok:
					return "—"
				case t.Error != "":
					return fmt.Sprintf("**not reached** in %.0f s: %s", t.Seconds, cellText(t.Error))
				}
				s := fmt.Sprintf("%.1f s", t.Seconds)
				if qt, ok := q.timingOf(n); ok && c.Operator != "quorate" {
					s += ratio(t.Seconds, qt.Seconds)
				}
				return s
			})
		}
		line("verdicts", func(c PeerCell) string { return c.Verdicts })
		if slices.ContainsFunc(row.Cells, func(c PeerCell) bool { return c.Error != "" }) {
			line("error", func(c PeerCell) string { return cellText(c.Error) })
		}
	}
	return b.String()
}

func (c *PeerCell) timingOf(name string) (Timing, bool) {
	if c == nil {
		return Timing{}, false
	}
	t, ok := c.timing(name)
	return t, ok && t.Error == ""
}

// cellText keeps a message on one table line.
func cellText(s string) string {
	s = strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// PeersHTML is the benchmark as a page: the longest write gap of each operation as grouped
// bars (log scale), then the tables.
func PeersHTML(r *Report, rows []PeerRow, operators []string) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><meta charset="utf-8"><title>Quorate side by side</title><style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}</style>`)
	fmt.Fprintf(&b, "<h1>Side by side</h1><p>Kubernetes %s, Quorate %s, generated %s.</p>", html.EscapeString(r.K8sVersion), html.EscapeString(r.Quorate), r.Generated.UTC().Format(time.RFC3339))
	b.WriteString(PeersChart(rows, operators))
	for _, row := range rows {
		fmt.Fprintf(&b, "<h2>%s</h2><table><tr><th></th>", html.EscapeString(row.Operation))
		for _, op := range operators {
			fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(op))
		}
		b.WriteString("</tr>")
		for _, c := range []struct {
			name string
			f    func(PeerCell) string
		}{
			{"longest write gap", func(c PeerCell) string { return ms(c.LongestGap) }},
			{"operations ok / failed / unknown", func(c PeerCell) string { return fmt.Sprintf("%d / %d / %d", c.OK, c.Failed, c.Unknown) }},
			{"verdicts", func(c PeerCell) string { return c.Verdicts }},
		} {
			fmt.Fprintf(&b, "<tr><td>%s</td>", c.name)
			for _, op := range operators {
				i := slices.IndexFunc(row.Cells, func(x PeerCell) bool { return x.Operator == op })
				if i < 0 {
					b.WriteString("<td>not run</td>")
					continue
				}
				fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(c.f(row.Cells[i])))
			}
			b.WriteString("</tr>")
		}
		b.WriteString("</table>")
	}
	return b.String()
}

// peerColours are the bars' colours by operator position.
var peerColours = []string{"#2b7", "#d73", "#37c", "#a5a"}

// PeersChart draws each operation's longest write gap per operator as bars on a log scale
// from 10 ms to 100 s.
func PeersChart(rows []PeerRow, operators []string) string {
	const barW, gap, h, left = 18, 30, 220, 60
	w := left + len(rows)*(len(operators)*barW+gap) + 20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-size="11">`, w, h+90)
	y := func(d time.Duration) float64 {
		s := math.Max(d.Seconds(), 0.01)
		return h - (math.Log10(s)+2)/4*h // 10 ms at the bottom, 100 s at the top
	}
	for _, tick := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, 100 * time.Second} {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="4" y="%.1f">%s</text>`, left, w, y(tick)+10, y(tick)+10, y(tick)+14, tick)
	}
	for i, row := range rows {
		x0 := left + i*(len(operators)*barW+gap)
		for j, op := range operators {
			k := slices.IndexFunc(row.Cells, func(c PeerCell) bool { return c.Operator == op })
			if k < 0 || !row.Cells[k].Writes {
				continue
			}
			c := row.Cells[k]
			top := y(c.LongestGap) + 10
			fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`,
				x0+j*barW, top, barW-2, float64(h)+10-top, peerColours[j%len(peerColours)], html.EscapeString(op), html.EscapeString(row.Operation), ms(c.LongestGap))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" transform="rotate(30 %d %d)">%s</text>`, x0, h+24, x0, h+24, html.EscapeString(row.Operation))
	}
	for j, op := range operators {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`, left+j*110, h+70, peerColours[j%len(peerColours)], left+j*110+14, h+79, html.EscapeString(op))
	}
	b.WriteString(`<text x="4" y="10">longest write gap (log scale)</text></svg>`)
	return b.String()
}
