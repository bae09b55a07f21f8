package llm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// addGeminiFixtures seeds f with each call of the shared gemini-cli files,
// when they are there: streamed calls framed both as SSE and as a JSON
// array, generateContent bodies as they are. With requests set, it adds
// each call's first chunk wrapped as the contents of a request instead.
func addGeminiFixtures(f *testing.F, requests bool) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "provider-streams", "gemini", "gemini-cli", "*.responses"))
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct {
				Response json.RawMessage `json:"response"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			var chunks []json.RawMessage
			if json.Unmarshal(line.Response, &chunks) != nil {
				chunks = []json.RawMessage{line.Response}
				if !requests {
					f.Add([]byte(line.Response))
					continue
				}
			}
			if requests {
				var ch struct {
					Candidates []struct {
						Content json.RawMessage `json:"content"`
					} `json:"candidates"`
				}
				if json.Unmarshal(chunks[0], &ch) == nil && len(ch.Candidates) > 0 {
					f.Add([]byte(`{"contents":[` + string(ch.Candidates[0].Content) + `],"generationConfig":{"temperature":1}}`))
				}
				continue
			}
			c := geminiRecorded{chunks: chunks}
			f.Add(c.sse())
			f.Add(c.array())
		}
	}
}

// FuzzGeminiResponse: arbitrary bodies never panic and decode
// deterministically into responses that keep their promises.
func FuzzGeminiResponse(f *testing.F) {
	addGeminiFixtures(f, false)
	f.Add([]byte(`[{"candidates":[{"content":{"parts":[{"text":"a","thoughtSignature":"S"},{"text":"","thoughtSignature":"T"}]},"finishReason":"STOP","index":1}]}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzResponse(t, Gemini, body)
	})
}

// FuzzGeminiRequest: arbitrary bodies never panic and decode
// deterministically; kept JSON is valid and compact.
func FuzzGeminiRequest(f *testing.F) {
	addGeminiFixtures(f, true)
	f.Add([]byte(geminiAllParts))
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzRequest(t, Gemini, body)
	})
}
