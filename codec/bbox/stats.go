package bbox

import (
	"sort"
	"strconv"
	"strings"
)

// Stats summarizes a document: lines per kind, tools used, and the token
// and cost figures its metrics lines report.
type Stats struct {
	Lines     int            `json:"lines"` // physical lines, header included
	Events    int            `json:"events"`
	ByKind    map[string]int `json:"by_kind"`
	Tools     []NameCount    `json:"tools"`     // t: and t!: calls by tool name
	MCP       []NameCount    `json:"mcp"`       // c: calls by server.method
	Subagents []NameCount    `json:"subagents"` // x: by type
	Skills    []NameCount    `json:"skills"`    // s: by skill
	CallIDs   int            `json:"call_ids"`
	Blobs     int            `json:"blobs"`
	Redacted  int            `json:"redacted"`
	MaxStep   int            `json:"max_step"`
	// Metrics sums the per-step "# metrics" lines (standalone and inline).
	Metrics Usage `json:"metrics"`
	// Summary holds the last session summary comment (a comment with
	// tokens_in=, tokens_out= or tokens= that is not a metrics line).
	Summary *Usage `json:"summary,omitempty"`
}

// Usage is a token and cost tally.
type Usage struct {
	Lines      int     `json:"lines"`
	Prompt     int64   `json:"prompt_tokens"`
	Completion int64   `json:"completion_tokens"`
	Cached     int64   `json:"cached_tokens"`
	Total      int64   `json:"total_tokens"`
	CostUSD    float64 `json:"cost_usd"`
}

// NameCount is a name with how often it occurred.
type NameCount struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// ComputeStats returns the statistics of doc.
func ComputeStats(doc *Document) Stats {
	st := Stats{ByKind: map[string]int{}}
	if h := doc.Header; h != nil {
		st.Lines += len(h.Lines) + 1
		if h.Closed {
			st.Lines++
		}
	}
	tools, mcp, subs, skills := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	ids := map[string]bool{}
	open := map[string]bool{} // t! ids/spans awaiting their t:
	for i := range doc.Lines {
		l := &doc.Lines[i]
		st.Lines += 1 + len(l.More)
		if l.Kind == KindBlank {
			continue
		}
		st.ByKind[l.Kind.String()]++
		if l.Kind.Event() {
			st.Events++
		}
		m := l.Meta()
		if m.ID != "" && introduces(l.Kind) {
			ids[m.ID] = true
		}
		if n, err := strconv.Atoi(m.Step); err == nil && n > st.MaxStep {
			st.MaxStep = n
		}
		for _, s := range append([]string{l.Body, l.Result}, l.More...) {
			st.Blobs += strings.Count(s, "@blob ")
			st.Redacted += strings.Count(s, "[redacted:")
		}
		key := m.ID
		if key == "" {
			key = m.Span
		}
		switch l.Kind {
		case KindToolStart:
			if key == "" || !open[key] {
				tools[l.Name]++
			}
			if key != "" {
				open[key] = true
			}
		case KindTool:
			if key != "" && open[key] {
				delete(open, key) // completion of a counted t!
			} else {
				tools[l.Name]++
			}
		case KindMCP:
			mcp[l.Name]++
		case KindSubagent:
			if callPart(l.Body) || !l.Arrow {
				subs[l.Name]++
			}
		case KindSkill:
			skills[l.Name]++
		case KindComment:
			st.comment(l.Body)
		case KindAgent:
			if i := strings.Index(l.Body, "# metrics"); i >= 0 {
				st.comment(l.Body[i+2:])
			}
		}
	}
	st.CallIDs = len(ids)
	st.Tools, st.MCP, st.Subagents, st.Skills = sorted(tools), sorted(mcp), sorted(subs), sorted(skills)
	return st
}

func sorted(m map[string]int) []NameCount {
	out := make([]NameCount, 0, len(m))
	for k, v := range m {
		out = append(out, NameCount{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// comment reads token and cost figures from a comment body.
func (st *Stats) comment(body string) {
	rest, isMetrics := strings.CutPrefix(body, "metrics")
	if isMetrics && rest != "" && !isSpace(rest[0]) {
		isMetrics = false
	}
	if !isMetrics {
		rest = body
	}
	var u Usage
	found := false
	for _, f := range mustFields(rest) {
		v := f.Value
		switch f.Key {
		case "prompt", "prompt_tokens", "tokens_in", "input_tokens":
			u.Prompt += atoi64(v)
			found = true
		case "completion", "completion_tokens", "tokens_out", "output_tokens":
			u.Completion += atoi64(v)
			found = true
		case "cached", "cached_tokens", "tokens_cached":
			u.Cached += atoi64(v)
			found = true
		case "tokens", "total_tokens":
			u.Total += atoi64(v)
			found = true
		case "cost", "cost_usd":
			c, _ := strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64)
			u.CostUSD += c
			found = true
		}
	}
	if !found {
		return
	}
	if u.Total == 0 {
		u.Total = u.Prompt + u.Completion
	}
	u.Lines = 1
	if isMetrics {
		st.Metrics.Lines++
		st.Metrics.Prompt += u.Prompt
		st.Metrics.Completion += u.Completion
		st.Metrics.Cached += u.Cached
		st.Metrics.Total += u.Total
		st.Metrics.CostUSD += u.CostUSD
		return
	}
	// Only comments that look like a session summary count as one; a
	// budget line reports what is left, not what was spent.
	if strings.Contains(rest, "tokens") && !strings.HasPrefix(rest, "budget:") {
		st.Summary = &u
	}
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
