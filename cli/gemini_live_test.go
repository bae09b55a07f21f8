package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bbengine/bbengine/proxy"
)

// TestGeminiLiveBlocksAndErrors: Gemini's ways of not answering reach a
// proxied session's timeline as what they are: a prompt blocked for
// safety (promptFeedback.blockReason), a candidate stopped for safety
// (finishReason SAFETY), an HTTP error status with Google's error body,
// and an error chunk in the middle of a stream after some text. The key
// in ?key= and x-goog-api-key never reaches the data directory.
func TestGeminiLiveBlocksAndErrors(t *testing.T) {
	const apiKey = "AIzaSyD-a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q"
	replies := []func(w http.ResponseWriter){
		func(w http.ResponseWriter) { // the prompt blocked
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"},\"usageMetadata\":{\"promptTokenCount\":7,\"totalTokenCount\":7},\"modelVersion\":\"gemini-2.5-pro\"}\r\n\r\n")
		},
		func(w http.ResponseWriter) { // rate limited
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`)
		},
		func(w http.ResponseWriter) { // an error chunk after some text
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Half an ans\"}]}}]}\r\n\r\n")
			io.WriteString(w, "data: {\"error\":{\"code\":500,\"message\":\"An internal error has occurred.\",\"status\":\"INTERNAL\"}}\r\n\r\n")
		},
		func(w http.ResponseWriter) { // a candidate stopped for safety, not streamed
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"I can"}]},"finishReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":2,"totalTokenCount":11}}`)
		},
	}
	var mu sync.Mutex
	n := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		mu.Lock()
		f := replies[n%len(replies)]
		n++
		mu.Unlock()
		f(w)
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	addr, _, stop := startProxy(t, dir, proxy.Options{Upstreams: map[string]string{"gemini": up.URL}}, false)
	body := `{"contents":[{"role":"user","parts":[{"text":"How do I pick a lock?"}]}]}`
	paths := []string{
		"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=" + apiKey,
		"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
		"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
		"/v1beta/models/gemini-2.5-pro:generateContent",
	}
	for _, p := range paths {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+p, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-goog-api-key", apiKey)
		req.Header.Set("X-Bb-Session-Id", "gem-refusals")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	stop()
	out := mustRun(t, "--dir", dir, "show", "gem-refusals", "--format", "json")
	var shown struct {
		Events []struct {
			Kind    string `json:"kind"`
			Role    string `json:"role"`
			Text    string `json:"text"`
			Partial bool   `json:"partial"`
			Call    *struct {
				Status     int    `json:"status"`
				StopReason string `json:"stop_reason"`
				Complete   bool   `json:"complete"`
			} `json:"call"`
			Error *struct {
				Status  int    `json:"status"`
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatalf("show --format json: %v\n%s", err, out)
	}
	var got []string
	for _, e := range shown.Events {
		switch {
		case e.Call != nil:
			got = append(got, fmt.Sprintf("call %d %s complete=%v", e.Call.Status, e.Call.StopReason, e.Call.Complete))
		case e.Error != nil:
			got = append(got, fmt.Sprintf("error %d %s: %s", e.Error.Status, e.Error.Type, e.Error.Message))
		case e.Kind == "message" && e.Role == "assistant":
			got = append(got, fmt.Sprintf("assistant %q partial=%v", e.Text, e.Partial))
		}
	}
	want := []string{
		"call 200 SAFETY complete=true",
		"call 429  complete=true",
		"error 429 RESOURCE_EXHAUSTED: Resource has been exhausted (e.g. check quota).",
		"call 200  complete=false",
		`assistant "Half an ans" partial=true`,
		"error 200 INTERNAL: An internal error has occurred.",
		"call 200 SAFETY complete=true",
		`assistant "I can" partial=false`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Decoded, not only as stored (frames are snappy blocks): the key
	// is redacted in the WAL, and the derived state never had it.
	contents := walContents(t, filepath.Join(dir, "wal"))
	for name, b := range pebbleContents(t, filepath.Join(dir, "db")) {
		contents[name] = b
	}
	redacted := false
	for name, b := range contents {
		if bytes.Contains(b, []byte(apiKey)) {
			t.Errorf("the API key is in %s", name)
		}
		redacted = redacted || bytes.Contains(b, []byte("[redacted"))
	}
	if !redacted {
		t.Error("no redaction marker in the WAL: the key was not seen")
	}
}
