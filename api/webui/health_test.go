package webui

import (
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/internal/metric"
)

// noService is a service the health page never asks: the page shows
// Options.Health alone. Any call panics.
type noService struct{ api.Service }

// serveHealthOf answers the health page of a UI given health (nil for
// none) and returns its body.
func serveHealthOf(t *testing.T, health func() Health) string {
	t.Helper()
	ui, err := New(&Options{Service: noService{}, Token: testToken, Health: health})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Close()
	req := httptest.NewRequest("GET", "http://127.0.0.1:8080"+Prefix+"health", nil)
	req.RemoteAddr = "127.0.0.1:5555"
	req.AddCookie(ui.testCookie())
	rec := httptest.NewRecorder()
	ui.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("health: %d\n%s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	checkInert(t, "health", body)
	if !strings.Contains(body, `<a href="/_bb/ui/health" class="here">health</a>`) {
		t.Errorf("the nav does not mark health as the page")
	}
	return body
}

// snapshotOf returns the snapshot of a histogram with buckets that
// observed each duration once.
func snapshotOf(buckets []float64, ds ...time.Duration) *metric.Snapshot {
	h := metric.NewVec("test_seconds", "A test.", buckets).With()
	for _, d := range ds {
		h.Observe(d)
	}
	s := h.Snapshot()
	return &s
}

// TestHealthPage renders a fixed Health: every field shows, with its
// text escaped (a WAL error holding markup renders inert), and the
// latency histograms are drawn as SVG bars, one per bucket, each with its
// exact count in a title and in the table under it.
func TestHealthPage(t *testing.T) {
	const script = `<script>alert(1)</script>`
	first := snapshotOf([]float64{.0001, .001, .01}, 50*time.Microsecond, 60*time.Microsecond, 70*time.Microsecond, 500*time.Microsecond, 2*time.Second)
	total := snapshotOf([]float64{.0001, .001, .01}, 80*time.Microsecond, 900*time.Microsecond, 900*time.Microsecond, 5*time.Millisecond, 5*time.Millisecond)
	h := Health{
		Proxy: true, Note: "from the proxy <b>here</b>",
		Status: "degraded", Mode: "lossless", Uptime: 3*time.Hour + 2*time.Second + 400*time.Millisecond, Queue: 7,
		Recorded: 1234, Dropped: 56, RefusedUnrecorded: 8, ForwardedUnrecorded: 9,
		WALError:  "write wal/00000001.seg: no space left on device " + script,
		WALDamage: []string{`wal: segment 3 missing <img src=x onerror=alert(1)>`},
		WALSize:   4096, DirSize: 16384, SizedAt: time.Now().Add(-3 * time.Second), SizeEvery: 10 * time.Second,
		Derivation: "paused: " + script, LagKnown: true, LagBytes: 2048, LagSeconds: 1.5,
		PerFrame:   snapshotOf([]float64{.00001, .0001}, 5*time.Microsecond, 50*time.Microsecond),
		AddedFirst: first, AddedTotal: total,
		Retrieval: []Timing{{Op: "search", Snapshot: *snapshotOf([]float64{.001, .01}, 2*time.Millisecond)}, {Op: "get", Snapshot: *snapshotOf([]float64{.001})}},
		Retention: "keeps raw frames for 7 days; last run removed 2 WAL segments " + script,
	}
	body := serveHealthOf(t, func() Health { return h })
	for _, want := range []string{
		`<p class="note" id="note">from the proxy &lt;b&gt;here&lt;/b&gt;</p>`,
		`<dd id="status" class="err">degraded</dd>`,
		`<dd id="mode">lossless</dd>`,
		`<dd id="uptime">3h0m2s</dd>`,
		`<dd id="queue">7 items waiting for the recorder</dd>`,
		`<dd id="recorded">1234</dd>`,
		`<dd id="dropped">56</dd>`,
		`<dd id="unrecorded">8 refused, 9 forwarded unrecorded</dd>`,
		`<dd id="walerror" class="err">write wal/00000001.seg: no space left on device &lt;script&gt;alert(1)&lt;/script&gt;</dd>`,
		`wal: segment 3 missing &lt;img src=x onerror=alert(1)&gt;`,
		`<dd id="walsize">4.0 KiB (4096 bytes)</dd>`,
		`<dd id="dirsize">16.0 KiB (16384 bytes)</dd>`,
		`<dd id="ratio">25.0% of the data directory is WAL</dd>`,
		`measured 3s ago`, `measured again every 10s`,
		`<dd id="derive" class="err">paused: &lt;script&gt;alert(1)&lt;/script&gt;</dd>`,
		`<dd id="lag">2.0 KiB (2048 bytes) behind the WAL; the oldest frame not derived is 1.5s old</dd>`,
		`<dd id="perframe">2 frames · mean 27.5µs · p50 ≈ 10µs · p99 ≈ 98.2µs</dd>`,
		`<span id="first-count">5</span>`, `<span id="total-count">5</span>`,
		`<span id="first-p99">&gt; 10ms</span>`, // one of five above the last bound
		`<span id="total-p50">≈ 775µs</span>`,   // rank 2.5: 1.5 of 2 into (100µs, 1ms]
		`<tr><td>search</td><td class="n">1</td><td class="n">2ms</td><td class="n">≈ 5.5ms</td><td class="n">≈ 9.91ms</td></tr>`,
		`<tr><td>get</td><td class="n">0</td><td class="n">–</td><td class="n">–</td><td class="n">–</td></tr>`,
		`<p id="retention">keeps raw frames for 7 days; last run removed 2 WAL segments &lt;script&gt;alert(1)&lt;/script&gt;</p>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// Each histogram: a bar per bucket (3 bounds and the one above), each
	// column titled with its exact count, the table under it the same.
	for id, s := range map[string]*metric.Snapshot{"first": first, "total": total} {
		cls := map[string]string{"first": "bar first", "total": "bar total"}[id]
		fig := body[strings.Index(body, `<figure class="hist" id="`+id+`">`):]
		fig = fig[:strings.Index(fig, "</figure>")]
		bars := regexp.MustCompile(`<rect class="`+cls+`" x="\d+" y="(\d+)" width="32" height="(\d+)"/>`).FindAllStringSubmatch(fig, -1)
		titles := regexp.MustCompile(`<title>[^<]*: (\d+) of 5 exchanges`).FindAllStringSubmatch(fig, -1)
		rows := regexp.MustCompile(`<tr><td>[^<]+</td><td class="n">(\d+)</td>`).FindAllStringSubmatch(fig, -1)
		if len(bars) != 4 || len(titles) != 4 || len(rows) != 4 {
			t.Fatalf("%s: %d bars, %d titles, %d table rows; want 4 of each:\n%s", id, len(bars), len(titles), len(rows), fig)
		}
		var most uint64
		for _, c := range s.Counts {
			most = max(most, c)
		}
		for i, c := range s.Counts {
			y, _ := strconv.Atoi(bars[i][1])
			height, _ := strconv.Atoi(bars[i][2])
			if titles[i][1] != strconv.FormatUint(c, 10) || rows[i][1] != titles[i][1] {
				t.Errorf("%s bucket %d: title %s, table %s, want %d", id, i, titles[i][1], rows[i][1], c)
			}
			if want := int(histPlotH * c / most); height != want || y+height != histBase {
				t.Errorf("%s bucket %d: bar at y %d, %d high; want %d high on the axis at %d", id, i, y, height, want, histBase)
			}
		}
	}
	if !strings.Contains(body, `<text class="tick" x="`) || !strings.Contains(body, `>&gt; 10ms</text>`) {
		t.Error("the bars lack their bucket labels")
	}

	// Without a proxy: the page says so, and shows no figure of recording
	// or latency (no zero as if measured), only what was measured.
	body = serveHealthOf(t, func() Health {
		return Health{Note: "No proxy is running.", WALSize: 100, DirSize: 400, SizedAt: time.Now(),
			Derivation: "not running", LagKnown: true}
	})
	for _, want := range []string{`id="norecording"`, `id="nolatency"`, `id="noretrieval"`, `<dd id="walsize">100 B (100 bytes)</dd>`,
		`<dd id="lag">0 bytes behind the WAL: caught up</dd>`, `for this page`, `<p id="retention">not running: the proxy runs the retention set for it</p>`,
		`not measured: the proxy's engine times it`} {
		if !strings.Contains(body, want) {
			t.Errorf("without a proxy, the page lacks %s", want)
		}
	}
	for _, bad := range []string{`id="recorded"`, `id="queue"`, `<svg`, `id="first-count"`, `id="retrieval"`} {
		if strings.Contains(body, bad) {
			t.Errorf("without a proxy, the page shows %s", bad)
		}
	}
	// A proxy without retention, sizes not measured yet.
	body = serveHealthOf(t, func() Health { return Health{Proxy: true, Status: "ok", Derivation: "starting"} })
	for _, want := range []string{`none set: everything is kept`, `id="nosizes"`, `<dd id="lag">not measured yet</dd>`, `<dd id="status">ok</dd>`} {
		if !strings.Contains(body, want) {
			t.Errorf("a proxy without retention: the page lacks %s", want)
		}
	}
	if body := serveHealthOf(t, nil); !strings.Contains(body, `id="unknown"`) {
		t.Errorf("a UI without Health: the page does not say it has no figures:\n%s", body)
	}
}

func TestSeconds(t *testing.T) {
	for _, tt := range []struct {
		s    float64
		want string
	}{
		{0, "0"}, {0.000025, "25µs"}, {0.00075, "750µs"}, {0.0000012, "1.2µs"}, {0.0015, "1.5ms"},
		{0.0123456, "12.3ms"}, {0.25, "250ms"}, {1, "1s"}, {2.5, "2.5s"}, {300, "300s"},
	} {
		if got := seconds(tt.s); got != tt.want {
			t.Errorf("seconds(%v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}
