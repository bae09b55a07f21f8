package webui

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/internal/bytesize"
	"github.com/bbengine/bbengine/internal/metric"
)

// Health is what the health page shows, gathered by whoever serves the
// UI: the proxy from itself, its metrics and the engine it runs;
// `bbengine ui` without a proxy from the data directory. A figure that
// was not measured stays absent (a nil snapshot, a false Proxy or
// LagKnown, a zero SizedAt) and the page says so: it never shows a zero
// that nothing measured.
type Health struct {
	// Proxy is set when a proxy runs and the recording figures and the
	// latencies below are its own. Without one they are absent.
	Proxy bool
	// Note, when set, is shown first: where the figures come from.
	Note string

	// Recording, as the proxy's /_bb/health reports it (proxy.Health).
	Status   string // ok, or degraded when frames cannot be recorded
	Mode     string // lossless or degrade
	Uptime   time.Duration
	Queue    int
	Recorded uint64 // frames recorded
	Dropped  uint64 // body chunks not recorded (degrade mode)
	// RefusedUnrecorded and ForwardedUnrecorded count the requests that
	// came while the WAL could not be written.
	RefusedUnrecorded, ForwardedUnrecorded uint64
	WALError                               string
	WALDamage                              []string

	// WALSize and DirSize are the bytes of the WAL directory's files and
	// of every file under the data directory, measured at SizedAt (zero:
	// not measured yet). SizeEvery is how often they are measured again;
	// zero means at each request of the page.
	WALSize, DirSize int64
	SizedAt          time.Time
	SizeEvery        time.Duration

	// Derivation is its state: ok, starting, or why it is paused, off or
	// not running.
	Derivation string
	// LagBytes are the WAL bytes not derived yet and LagSeconds the age
	// of the oldest frame not derived, when LagKnown.
	LagKnown   bool
	LagBytes   uint64
	LagSeconds float64
	// PerFrame is derivation's time per WAL frame, nil when not measured.
	PerFrame *metric.Snapshot

	// AddedFirst and AddedTotal are the latency the proxy added over the
	// upstream's own, to the first response byte and to the end; nil
	// when not measured.
	AddedFirst, AddedTotal *metric.Snapshot

	// Retrieval is the memory's retrieval latency by operation; empty
	// when not measured.
	Retrieval []Timing

	// Retention is what the retention the user set keeps and what its
	// last run did (the /_bb/health line); "" when none is set.
	Retention string
}

// Timing is the latency histogram of one named operation.
type Timing struct {
	Op string
	metric.Snapshot
}

// healthPage is the health template's data.
type healthPage struct {
	Title string
	Nav   string
	Live  bool
	Frag  string
	// Known is false when the UI was given no Health.
	Known     bool
	H         Health
	Uptime    string
	WALSize   string
	DirSize   string
	Ratio     string
	Sized     string
	Lag       string
	PerFrame  *summary
	Latency   []*histView
	Retrieval []timingRow
}

// summary is a histogram's count, mean and estimated quantiles, as text.
type summary struct {
	Count          uint64
	Mean, P50, P99 string
}

// timingRow is one retrieval operation's summary.
type timingRow struct {
	Op string
	summary
}

// serveHealth answers the health page: Options.Health, drawn.
func (u *UI) serveHealth(w http.ResponseWriter, r *http.Request) {
	p := &healthPage{Title: "health", Nav: "health"}
	if u.health == nil {
		u.render(w, http.StatusOK, "health", p)
		return
	}
	h := u.health()
	p.Known, p.H = true, h
	p.Uptime = h.Uptime.Round(time.Second).String()
	now := time.Now()
	if !h.SizedAt.IsZero() {
		p.WALSize, p.DirSize = sizeText(h.WALSize), sizeText(h.DirSize)
		if h.DirSize > 0 {
			p.Ratio = strconv.FormatFloat(100*float64(h.WALSize)/float64(h.DirSize), 'f', 1, 64) + "% of the data directory is WAL"
		}
		p.Sized = "measured " + now.Sub(h.SizedAt).Round(time.Second).String() + " ago, at " + h.SizedAt.Format("15:04:05 MST")
		if h.SizeEvery > 0 {
			p.Sized += "; measured again every " + h.SizeEvery.String() + ", the figures /_bb/metrics reports"
		} else {
			p.Sized += ", for this page"
		}
	}
	if h.LagKnown {
		p.Lag = sizeText(int64(h.LagBytes)) + " behind the WAL; the oldest frame not derived is " + seconds(h.LagSeconds) + " old"
		if h.LagBytes == 0 {
			p.Lag = "0 bytes behind the WAL: caught up"
		}
	}
	if h.PerFrame != nil {
		p.PerFrame = summarize(*h.PerFrame)
	}
	if h.AddedFirst != nil {
		p.Latency = append(p.Latency, newHistView("first", "added to the first byte", "first", *h.AddedFirst))
	}
	if h.AddedTotal != nil {
		p.Latency = append(p.Latency, newHistView("total", "added in total", "total", *h.AddedTotal))
	}
	for _, t := range h.Retrieval {
		p.Retrieval = append(p.Retrieval, timingRow{Op: t.Op, summary: *summarize(t.Snapshot)})
	}
	u.render(w, http.StatusOK, "health", p)
}

// sizeText is n in binary units and exactly.
func sizeText(n int64) string {
	return bytesize.Format(n) + " (" + strconv.FormatInt(n, 10) + " bytes)"
}

// summarize returns s's count, mean and p50 and p99 as text; the figures
// are "–" when there is no observation.
func summarize(s metric.Snapshot) *summary {
	sm := &summary{Count: s.Count(), Mean: "–", P50: "–", P99: "–"}
	if sm.Count == 0 {
		return sm
	}
	last := 0.0
	if len(s.Upper) > 0 {
		last = s.Upper[len(s.Upper)-1]
	}
	sm.Mean = seconds(s.Mean().Seconds())
	sm.P50, sm.P99 = quantile(s.Quantile(0.5), last), quantile(s.Quantile(0.99), last)
	return sm
}

// quantile is an estimated quantile as text: above the last bound, the
// buckets only say so.
func quantile(v, last float64) string {
	if math.IsInf(v, 1) {
		return "> " + seconds(last)
	}
	return "≈ " + seconds(v)
}

// seconds formats a duration in seconds with three significant digits
// at most, in the unit that suits it.
func seconds(s float64) string {
	v, unit := s, "s"
	switch {
	case s == 0:
		return "0"
	case s < 1e-3:
		v, unit = s*1e6, "µs"
	case s < 1:
		v, unit = s*1e3, "ms"
	}
	prec := 0
	switch {
	case v < 10:
		prec = 2
	case v < 100:
		prec = 1
	}
	t := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(t, ".") {
		t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
	}
	return t + unit
}

// The histogram's drawing, in SVG user units (pixels at 100%).
const (
	barStep   = 38  // from one bar's left to the next's
	barWidth  = 32  // a bar
	histPad   = 8   // left and right
	histTop   = 16  // room for the count over the tallest bar
	histPlotH = 120 // the tallest bar
	histBase  = histTop + histPlotH
	histH     = histBase + 18 // room for the bucket labels
)

// histView is one latency histogram drawn as SVG bars, with its table.
type histView struct {
	ID    string // the figure's id
	Name  string
	Class string // the bars' CSS class, for their colour
	W, H  int
	Base  int // the axis' y
	Bars  []bar
	summary
}

// bar is one bucket: its column (the slot, hovered with its title) and
// its bar, label and count.
type bar struct {
	X, W, Top, PlotH int // the slot
	BarX, BarY       int
	BarW, BarH       int
	Mid              int // the column's centre, for its texts
	ValY, LabelY     int
	Label            string // the bucket's upper bound, or "> last"
	Range            string // the bucket, in words
	Count            uint64
	Cumulative       string // the share of observations up to here
	Title            string // the exact figures, shown on hover
}

// newHistView draws s: one bar per bucket, its height proportional to
// its count (a bucket with any count is at least one unit tall).
func newHistView(id, name, class string, s metric.Snapshot) *histView {
	v := &histView{ID: id, Name: name, Class: class, H: histH, Base: histBase, summary: *summarize(s)}
	v.W = 2*histPad + len(s.Counts)*barStep
	var most uint64
	for _, c := range s.Counts {
		most = max(most, c)
	}
	var below uint64
	for i, c := range s.Counts {
		b := bar{X: histPad + i*barStep, W: barStep, Top: histTop, PlotH: histPlotH, Count: c, LabelY: histBase + 13}
		b.Mid = b.X + barStep/2
		b.BarX, b.BarW = b.X+(barStep-barWidth)/2, barWidth
		switch {
		case i == len(s.Upper):
			last := 0.0
			if i > 0 {
				last = s.Upper[i-1]
			}
			b.Label, b.Range = "> "+seconds(last), "above "+seconds(last)
		case i == 0:
			b.Label, b.Range = seconds(s.Upper[0]), "up to "+seconds(s.Upper[0])
		default:
			b.Label, b.Range = seconds(s.Upper[i]), "over "+seconds(s.Upper[i-1])+", up to "+seconds(s.Upper[i])
		}
		if most > 0 {
			b.BarH = int(math.Round(float64(histPlotH) * float64(c) / float64(most)))
			if c > 0 {
				b.BarH = max(b.BarH, 1)
			}
		}
		b.BarY = histBase - b.BarH
		b.ValY = b.BarY - 3
		below += c
		b.Cumulative = "–"
		if v.Count > 0 {
			b.Cumulative = strconv.FormatFloat(100*float64(below)/float64(v.Count), 'f', 1, 64) + "%"
		}
		b.Title = fmt.Sprintf("%s: %d of %d exchanges (%s up to here)", b.Range, c, v.Count, b.Cumulative)
		v.Bars = append(v.Bars, b)
	}
	return v
}
