package proxy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/llm"
)

// envelopeReference is how usage was read before doc scanned for it: the
// whole document decoded with encoding/json. doc must read the same.
type envelopeReference struct {
	Usage         *usageObject `json:"usage"`
	UsageMetadata *usageObject `json:"usageMetadata"`
	Message       *struct {
		Usage *usageObject `json:"usage"`
	} `json:"message"`
	Response *struct {
		Usage *usageObject `json:"usage"`
	} `json:"response"`
}

func docReference(s *sniffer, b []byte) {
	var e envelopeReference
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
		return
	}
	s.merge(e.Usage)
	s.merge(e.UsageMetadata)
	if e.Message != nil {
		s.merge(e.Message.Usage)
	}
	if e.Response != nil {
		s.merge(e.Response.Usage)
	}
}

var usageSeeds = []string{
	`{"id":"msg_1","type":"message","content":[{"type":"text","text":"hi \"usage\""}],"usage":{"input_tokens":12,"output_tokens":40,"cache_read_input_tokens":100}}`,
	`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":5,"cache_creation_input_tokens":7}}}`,
	`{"type":"message_delta","delta":{},"usage":{"output_tokens":9}}`,
	`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":1}}}`,
	`{"type":"response.completed","response":{"usage":{"input_tokens":8,"output_tokens":2,"input_tokens_details":{"cached_tokens":6}}}}`,
	`{"candidates":[],"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":2,"totalTokenCount":13,"cachedContentTokenCount":4}}`,
	`{"candidates":[],"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":2,"thoughtsTokenCount":30,"toolUsePromptTokenCount":5,"totalTokenCount":48}}`,
	`{"Usage":{"input_tokens":1},"usage":{"output_tokens":2}}`,
	`{"usage":{"input_tokens":1},"usage":null}`,
	`{"message":"an error","usage":{"input_tokens":1}}`,
	`{"message":null,"response":{"usage":null}}`,
	`{"usage":{"input_tokens":"x"}}`,
	`{"usage":{"input_tokens":1}`,
	`{"usage":{"input_tokens":1}} x`,
	// Where plainUsage hands over to encoding/json.
	`{"usage":{"input_tokens":12,"INPUT_TOKENS":3}}`,
	`{"usage":{"input_to\u212Aens":5,"output_tokens":2}}`,
	"{\"usage\":{\"input_to\u212aens\":5}}",
	`{"usage":{"input_tokens":1.0}}`,
	`{"usage":{"input_tokens":-1,"output_tokens":4}}`,
	`{"usage":{"cache_read_input_tokens":null,"input_tokens":2}}`,
	`{"usage":{"cache_read_input_tokens":5},"usage":{"cache_read_input_tokens":null}}`,
	`{"usage":{"cache_read_input_tokens":5},"usage":{"input_tokens":1}}`,
	`{"usage":{"input_tokens":99999999999999999999}}`,
	`{"usage":{"input_tokens":999999999999999999}}`,
	`{"usage":{"input_tokens":1,"prompt_tokens_details":{"cached_tokens":3}}}`,
	`{"usage":{"input_tokens":1,"Prompt_Tokens_Details":{"cached_tokens":3}}}`,
	`{"usage":{"input_tokens":1,"extra":{"a":[1,2]},"x":"y"}}`,
	`{"usage":{"input_\u0074okens":7}}`,
	`{"usage":{"total_tokens":"7"}}`,
	`{"usage":{"input_tokens":true}}`,
	`{"usage":{"input_tokens":1,}}`,
	`{"usage":{"input_tokens":0,"output_tokens":00}}`,
	`{"usage":{}}`,
	`{"usage":[]}`,
}

func TestSnifferDocMatchesDecode(t *testing.T) {
	for _, s := range usageSeeds {
		checkDoc(t, []byte(s))
	}
}

func FuzzSnifferDoc(f *testing.F) {
	for _, s := range usageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDoc(t, b) })
}

func checkDoc(t *testing.T, b []byte) {
	t.Helper()
	var got, want sniffer
	got.doc(b)
	docReference(&want, b)
	if got.usage != want.usage || got.cacheIn != want.cacheIn {
		t.Fatalf("doc(%q) = %+v (cached in %v), decoding whole gives %+v (%v)", b, got.usage, got.cacheIn, want.usage, want.cacheIn)
	}
}

// The scan reads the usage of a 1.4 KB reply without decoding the reply.
func BenchmarkSnifferDoc(b *testing.B) {
	doc := []byte(usageSeeds[0])
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		var s sniffer
		s.doc(doc)
	}
	var s sniffer
	s.doc(doc)
	if s.usage == (exchange.Usage{}) {
		b.Fatal("no usage read")
	}
}

// TestSnifferGeminiUsage: the usage the proxy reads from a Gemini stream
// (for the breaker and the metrics) is what codec/llm decodes from it:
// tool-use prompt tokens are input, thinking tokens output.
func TestSnifferGeminiUsage(t *testing.T) {
	body := "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"plan\",\"thought\":true}]}}],\"usageMetadata\":{\"promptTokenCount\":100,\"thoughtsTokenCount\":12}}\r\n\r\n" +
		"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"done\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":100,\"candidatesTokenCount\":7,\"thoughtsTokenCount\":40,\"toolUsePromptTokenCount\":9,\"cachedContentTokenCount\":60,\"totalTokenCount\":156}}\r\n\r\n"
	s := sniffer{sse: true}
	s.feed([]byte(body))
	got := s.result()
	resp, err := llm.DecodeResponse(llm.Gemini, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	u := resp.Usage
	if got == nil || got.InputTokens != u.Input || got.OutputTokens != u.Output || got.CacheReadTokens != u.CacheRead || got.TotalTokens != 156 {
		t.Errorf("sniffed %+v; codec/llm: input %d, output %d, cache read %d (total 156)", got, u.Input, u.Output, u.CacheRead)
	}
}

// TestUsageCountsNames: plainUsage's names are usageObject's json tags,
// each count lands in its own member (every count given a distinct
// value decodes as json.Unmarshal decodes it), and the nested members
// are the ones it leaves to json.Unmarshal.
func TestUsageCountsNames(t *testing.T) {
	var counts, details []string
	ty := reflect.TypeFor[usageObject]()
	for i := range ty.NumField() {
		f := ty.Field(i)
		switch f.Type.Kind() {
		case reflect.Struct:
			details = append(details, f.Tag.Get("json"))
		default:
			counts = append(counts, f.Tag.Get("json"))
		}
	}
	slices.Sort(counts)
	slices.Sort(details)
	if got := slices.Sorted(slices.Values(usageCounts[:])); !slices.Equal(got, counts) {
		t.Errorf("usageCounts %v, usageObject's counts %v", got, counts)
	}
	if got := slices.Sorted(slices.Values(usageDetails[:])); !slices.Equal(got, details) {
		t.Errorf("usageDetails %v, usageObject's nested members %v", got, details)
	}
	var doc strings.Builder
	doc.WriteString("{")
	for i, name := range usageCounts {
		if i > 0 {
			doc.WriteString(",")
		}
		fmt.Fprintf(&doc, "%q:%d", name, 100+i)
	}
	doc.WriteString("}")
	got, ok := plainUsage(usageObject{}, []byte(doc.String()))
	var want usageObject
	if err := json.Unmarshal([]byte(doc.String()), &want); err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("plainUsage(%s) = %+v, %v; json.Unmarshal gives %+v, %v", doc.String(), got, ok, want, err)
	}
}
