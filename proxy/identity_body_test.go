package proxy

import (
	"encoding/json"
	"testing"
)

// readBodyUnmarshal is readBody as it was, decoding the whole body with
// encoding/json: the reference readBody must agree with.
func readBodyUnmarshal(body []byte) (string, bool) {
	var bi bodyInfo
	if json.Unmarshal(body, &bi) != nil {
		return "", false
	}
	return bi.Model, bi.Stream
}

func TestReadBodyMatchesUnmarshal(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		`{"MODEL":"upper","Stream":true}`,
		`{"model":"a","model":"b"}`,
		`{"model":5,"stream":true}`,
		`{"model":"m","stream":"yes"}`,
		`{"model":"m","messages":[1,2,}`,
		`{"model":"m"} trailing`,
		`{"model":null,"stream":null,"metadata":null}`,
		`{"metadata":{"user_id":"x"},"metadata":{"other":1},"model":"m"}`,
		`{"mod\u0065l":"escaped"}`,
		` {"model":"spaced"} `,
	} {
		m, s, _ := readBody([]byte(body))
		wm, ws := readBodyUnmarshal([]byte(body))
		if m != wm || s != ws {
			t.Errorf("readBody(%s) = %q, %v; encoding/json gives %q, %v", body, m, s, wm, ws)
		}
	}
}
