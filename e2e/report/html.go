package report

import (
	"fmt"
	"github.com/quorate-dev/quorate/e2e/checker/availability"
	"html"
	"math"
	"sort"
	"strings"
	"time"
)

const (
	svgW, svgH     = 960, 200
	padL, padR     = 50, 20
	padT, padB     = 20, 30
	plotW          = svgW - padL - padR
	plotH          = svgH - padT - padB
	colorOK        = "#2e9e5b"
	colorFail      = "#d64545"
	colorUnknown   = "#f0a030"
	colorFault     = "rgba(214,69,69,0.12)"
	colorGap       = "#d64545"
	colorEventLine = "#5566aa"
)

// HTML renders one page for one or more reports (one section per Kubernetes version).
func HTML(reports []*Report) string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>Quorate conformance report</title><style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:14px}
.pass{color:#1d7a44;font-weight:bold}.fail{color:#b02a2a;font-weight:bold}.skipped{color:#666;font-weight:bold}.exp{color:#8a6d00}
section.scenario{border-top:2px solid #ddd;margin-top:2em;padding-top:.5em}
svg{background:#fafafa;border:1px solid #e3e3e3}.small{font-size:13px;color:#555}
</style></head><body>
<h1>Quorate conformance report</h1>
`)
	// Matrix of version x scenario.
	scen := map[string]bool{}
	for _, r := range reports {
		for _, s := range r.Scenarios {
			scen[s.Name] = true
		}
	}
	names := make([]string, 0, len(scen))
	for n := range scen {
		names = append(names, n)
	}
	sort.Strings(names)
	b.WriteString("<h2>Summary</h2><table><tr><th>Kubernetes</th>")
	for _, n := range names {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(n))
	}
	b.WriteString("</tr>")
	for _, r := range reports {
		fmt.Fprintf(&b, "<tr><td>%s</td>", html.EscapeString(r.K8sVersion))
		for _, n := range names {
			cell := "<td>-</td>"
			for _, s := range r.Scenarios {
				if s.Name == n {
					cell = fmt.Sprintf(`<td><a href="#%s" class="%s">%s</a></td>`, anchor(r, s), resultCls(s.Result()), s.Result())
				}
			}
			b.WriteString(cell)
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
	for _, r := range reports {
		fmt.Fprintf(&b, "<h2>Kubernetes %s</h2><p class=small>Quorate %s, generated %s</p>", html.EscapeString(r.K8sVersion), html.EscapeString(r.Quorate), r.Generated.UTC().Format(time.RFC3339))
		if r.Environment != nil {
			b.WriteString(r.Environment.html())
		}
		for _, s := range r.Scenarios {
			writeScenario(&b, r, s)
		}
	}
	b.WriteString(`<p class=small>Timeline: operations per second by outcome (green ok, red failed, orange unknown);
shaded bands are faults, blue lines are membership changes and actions, the red bracket is the longest time without an acknowledged write.
Latency: every successful operation (sampled), log scale.</p></body></html>`)
	return b.String()
}

func anchor(r *Report, s Scenario) string {
	return strings.NewReplacer(".", "-", " ", "-").Replace(r.K8sVersion + "-" + s.Name)
}

// resultCls is the CSS class of a result.
func resultCls(r Result) string {
	switch r {
	case ResultPass:
		return "pass"
	case ResultSkipped:
		return "skipped"
	}
	return "fail"
}

func cls(ok bool) string {
	if ok {
		return "pass"
	}
	return "fail"
}

func writeScenario(b *strings.Builder, r *Report, s Scenario) {
	fmt.Fprintf(b, `<section class="scenario" id="%s"><h3>%s — <span class="%s">%s</span></h3>`, anchor(r, s), html.EscapeString(s.Name), resultCls(s.Result()), s.Result())
	if s.Result() == ResultSkipped {
		b.WriteString("<p>The scenario did not run: the cluster lacks a prerequisite.</p><ul>")
		for _, m := range s.Skipped {
			fmt.Fprintf(b, "<li>%s</li>", html.EscapeString(m))
		}
		b.WriteString("</ul></section>")
		return
	}
	if s.Error != "" {
		fmt.Fprintf(b, `<p class="fail">The scenario did not run to its end: %s</p>`, html.EscapeString(s.Error))
	}
	fmt.Fprintf(b, "<p class=small>budget: longest write gap %s, first write within %s, success ratio %.1f%%; duration %s; first write after %s</p>", s.Budget.MaxWriteGap, s.Budget.MaxFirstWrite, 100*s.Budget.MinSuccessRatio, s.Duration.Round(time.Second), s.Stats.FirstWrite.Round(time.Millisecond))
	if !s.profiled() {
		writeProfile(b, s)
		writeEvents(b, s)
		writeHistoryLink(b, s)
		b.WriteString("</section>")
		return
	}
	// The client profiles side by side, then each one's verdicts, pictures and history.
	b.WriteString("<table><tr><th>client profile</th><th>result</th><th>longest write gap</th><th>ops ok/fail/unknown</th><th>p99 latency</th><th>first write after</th></tr>")
	for _, p := range s.Profiles() {
		ps := s.ForProfile(p)
		fmt.Fprintf(b, `<tr><td>%s</td><td class="%s">%s</td><td>%s</td><td>%d/%d/%d</td><td>%s</td><td>%s</td></tr>`, html.EscapeString(ps.Profile), cls(ps.profilePassed()), mark(ps.profilePassed()),
			ps.Stats.MaxWriteGap.Round(time.Millisecond), ps.Stats.OK, ps.Stats.Fail, ps.Stats.Unknown, ps.Stats.P99.Round(100*time.Microsecond), ps.Stats.FirstWrite.Round(time.Millisecond))
	}
	b.WriteString("</table>")
	for _, p := range s.Profiles() {
		ps := s.ForProfile(p)
		fmt.Fprintf(b, `<h4>client profile %s — <span class="%s">%s</span></h4>`, html.EscapeString(ps.Profile), cls(ps.profilePassed()), mark(ps.profilePassed()))
		writeProfile(b, ps)
		writeHistoryLink(b, ps)
	}
	writeEvents(b, s)
	b.WriteString("</section>")
}

// writeProfile writes the scenario's (first profile's) verdicts, pictures and longest write
// gaps.
func writeProfile(b *strings.Builder, s Scenario) {
	b.WriteString("<table><tr><th>checker</th><th>verdict</th><th>reason</th></tr>")
	for _, v := range s.Verdicts {
		cell := verdictCell(s, v.Checker)
		c := "pass"
		switch {
		case cell == "fail (expected)":
			c = "exp"
		case cell != "pass":
			c = "fail"
		}
		details := ""
		for _, d := range v.Details {
			details += "<br><span class=small>" + html.EscapeString(d) + "</span>"
		}
		for name, path := range v.Artifacts {
			details += fmt.Sprintf(`<br><a href="%s">%s</a>`, html.EscapeString(lastPath(path)), html.EscapeString(name))
		}
		fmt.Fprintf(b, `<tr><td>%s</td><td class="%s">%s</td><td>%s%s</td></tr>`, v.Checker, c, cell, html.EscapeString(v.Reason), details)
	}
	b.WriteString("</table>")
	b.WriteString(Timeline(s))
	b.WriteString("<br>")
	b.WriteString(Latency(s))
	b.WriteString("<br>")
	b.WriteString(GapChart(s))
	if len(s.Stats.Gaps.Longest) > 0 {
		b.WriteString("<table><tr><th>longest times without an acknowledged write</th><th>from</th><th>to</th></tr>")
		for _, g := range s.Stats.Gaps.Longest {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%s</td></tr>", g.Length().Round(10*time.Microsecond), offsetMs(s, g.From), offsetMs(s, g.To))
		}
		b.WriteString("</table>")
	}
}

// writeHistoryLink links the scenario's (first profile's) saved history.
func writeHistoryLink(b *strings.Builder, s Scenario) {
	if s.History != "" {
		fmt.Fprintf(b, `<p class=small>history: <a href="%s">%s</a></p>`, html.EscapeString(s.History), html.EscapeString(s.History))
	}
}

// writeEvents writes the scenario's events.
func writeEvents(b *strings.Builder, s Scenario) {
	if len(s.Events) > 0 {
		b.WriteString("<table><tr><th>time</th><th>kind</th><th>what</th><th>detail</th></tr>")
		for _, e := range s.Events {
			t := offset(s, e.Time)
			if e.End != 0 {
				t += " to " + offset(s, e.End)
			}
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>", t, html.EscapeString(e.Kind), html.EscapeString(e.Name), html.EscapeString(e.Text))
		}
		b.WriteString("</table>")
	}
}

func lastPath(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// xOf maps a time offset to the plot's x coordinate.
func xOf(s Scenario, t int64) float64 {
	span := float64(s.HistoryEnd - s.HistoryStart)
	if span <= 0 {
		return padL
	}
	return padL + float64(plotW)*math.Max(0, math.Min(1, float64(t-s.HistoryStart)/span))
}

func axis(b *strings.Builder, s Scenario) {
	span := time.Duration(s.HistoryEnd - s.HistoryStart)
	step := 10 * time.Second
	if span > 5*time.Minute {
		step = time.Minute
	}
	for t := time.Duration(0); t <= span; t += step {
		x := xOf(s, s.HistoryStart+int64(t))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ccc"/><text x="%.1f" y="%d" font-size="11" text-anchor="middle">%ds</text>`,
			x, padT+plotH, x, padT+plotH+4, x, padT+plotH+16, int(t.Seconds()))
	}
}

// Timeline draws operations per second by outcome, the faults and events, and the longest
// write gap.
func Timeline(s Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img"><title>timeline of %s</title>`, svgW, svgH, html.EscapeString(s.Name))
	maxN := 1
	for _, w := range s.Stats.Windows {
		maxN = max(maxN, w.OK+w.Fail+w.Unknown)
	}
	for _, e := range s.Events {
		if e.End != 0 {
			x1, x2 := xOf(s, e.Time), xOf(s, e.End)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`, x1, padT, math.Max(1, x2-x1), plotH, colorFault, html.EscapeString(e.Name), html.EscapeString(e.Text))
		}
	}
	width := s.Stats.Width
	if width == 0 {
		width = time.Second
	}
	for _, w := range s.Stats.Windows {
		x1, x2 := xOf(s, w.Start), xOf(s, w.Start+int64(width))
		bw := math.Max(1, x2-x1-1)
		y := float64(padT + plotH)
		for _, part := range []struct {
			n     int
			color string
		}{{w.OK, colorOK}, {w.Fail, colorFail}, {w.Unknown, colorUnknown}} {
			if part.n == 0 {
				continue
			}
			h := float64(plotH) * float64(part.n) / float64(maxN)
			y -= h
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x1, y, bw, h, part.color)
		}
	}
	// Fault names over the bars, on a light background so that they stay readable.
	for i, e := range s.Events {
		if e.End != 0 {
			y := padT + 12 + 12*(i%3)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" fill="#b02a2a" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text>`, xOf(s, e.Time)+2, y, html.EscapeString(e.Name))
		}
	}
	for _, e := range s.Events {
		if e.End == 0 {
			x := xOf(s, e.Time)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-dasharray="3,2"><title>%s: %s</title></line>`, x, padT, x, padT+plotH, colorEventLine, html.EscapeString(e.Name), html.EscapeString(e.Text))
		}
	}
	if s.Stats.MaxWriteGap > 0 {
		x1, x2 := xOf(s, s.Stats.GapStart), xOf(s, s.Stats.GapEnd)
		y := padT + plotH + 2
		fmt.Fprintf(&b, `<path d="M%.1f %d v4 H%.1f v-4" stroke="%s" fill="none" stroke-width="2"><title>longest write gap %s</title></path>`, x1, y, x2, colorGap, s.Stats.MaxWriteGap.Round(time.Millisecond))
	}
	axis(&b, s)
	fmt.Fprintf(&b, `<text x="4" y="%d" font-size="11">%d/s</text><text x="4" y="%d" font-size="11">0</text>`, padT+8, maxN, padT+plotH)
	b.WriteString("</svg>")
	return b.String()
}

// Latency draws every (sampled) successful operation's latency on a log scale.
func Latency(s Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img"><title>latency of %s</title>`, svgW, svgH, html.EscapeString(s.Name))
	lo, hi := math.Log10(float64(100*time.Microsecond)), math.Log10(float64(10*time.Second))
	yOf := func(d float64) float64 {
		l := math.Log10(math.Max(d, float64(100*time.Microsecond)))
		return float64(padT+plotH) - float64(plotH)*math.Min(1, (l-lo)/(hi-lo))
	}
	for _, tick := range []struct {
		d     time.Duration
		label string
	}{{time.Millisecond, "1ms"}, {10 * time.Millisecond, "10ms"}, {100 * time.Millisecond, "100ms"}, {time.Second, "1s"}} {
		y := yOf(float64(tick.d))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/><text x="4" y="%.1f" font-size="11">%s</text>`, padL, y, padL+plotW, y, y+4, tick.label)
	}
	for _, e := range s.Events {
		if e.End != 0 {
			x1, x2 := xOf(s, e.Time), xOf(s, e.End)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`, x1, padT, math.Max(1, x2-x1), plotH, colorFault)
		}
	}
	for _, p := range s.Latencies {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="1.5" fill="#3a6ea5" fill-opacity="0.6"/>`, xOf(s, s.HistoryStart+p[0]), yOf(float64(p[1])))
	}
	axis(&b, s)
	b.WriteString("</svg>")
	return b.String()
}

// GapChart draws how many intervals between acknowledged writes exceeded each threshold, on a
// log scale, with the 50th, 99th and 99.9th percentiles.
func GapChart(s Scenario) string {
	g := s.Stats.Gaps
	var b strings.Builder
	const rowH, labelW, chartW = 18, 90, 500
	h := padT + rowH*(len(availability.GapThresholds)+1) + 8
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img"><title>write gaps of %s</title>`, labelW+chartW+80, h, html.EscapeString(s.Name))
	fmt.Fprintf(&b, `<text x="4" y="%d" font-size="11">time between acknowledged writes (%d intervals): p50 %s, p99 %s, p99.9 %s</text>`,
		padT-2, g.Count, g.P50.Round(10*time.Microsecond), g.P99.Round(10*time.Microsecond), g.P999.Round(10*time.Microsecond))
	top := math.Log10(float64(max(g.Count, 10)) + 1)
	for i, t := range availability.GapThresholds {
		n := 0
		if i < len(g.Over) {
			n = g.Over[i]
		}
		y := padT + 6 + rowH*i
		w := float64(chartW) * math.Log10(float64(n)+1) / top
		color := colorOK
		if t >= 100*time.Millisecond && n > 0 {
			color = colorUnknown
		}
		if s.Budget.MaxWriteGap > 0 && t >= s.Budget.MaxWriteGap && n > 0 {
			color = colorFail
		}
		fmt.Fprintf(&b, `<text x="4" y="%d" font-size="11">over %s</text><rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/><text x="%.1f" y="%d" font-size="11">%d</text>`,
			y+12, t, labelW, y+2, math.Max(w, 1), rowH-4, color, float64(labelW)+math.Max(w, 1)+4, y+12, n)
	}
	b.WriteString("</svg>")
	return b.String()
}

func offsetMs(s Scenario, t int64) string {
	if s.HistoryStart == 0 {
		return ""
	}
	return fmt.Sprintf("+%.3fs", time.Duration(t-s.HistoryStart).Seconds())
}
