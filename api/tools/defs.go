package tools

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// OpenAITool is a function definition for OpenAI's Chat Completions and
// Responses tools lists.
type OpenAITool struct {
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is the function of an OpenAITool.
type OpenAIFunction struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Parameters  *jsonschema.Schema `json:"parameters"`
}

// AnthropicTool is a tool definition for Anthropic's Messages API.
type AnthropicTool struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	InputSchema *jsonschema.Schema `json:"input_schema"`
}

// Defs returns the tools as function definitions in format: "openai"
// ([]OpenAITool) or "anthropic" ([]AnthropicTool).
func Defs(format string) (any, error) {
	switch format {
	case "openai":
		out := make([]OpenAITool, len(All))
		for i, t := range All {
			out[i] = OpenAITool{Type: "function", Function: OpenAIFunction{Name: t.Name, Description: t.Description, Parameters: t.In}}
		}
		return out, nil
	case "anthropic":
		out := make([]AnthropicTool, len(All))
		for i, t := range All {
			out[i] = AnthropicTool{Name: t.Name, Description: t.Description, InputSchema: t.In}
		}
		return out, nil
	}
	return nil, fmt.Errorf("--format %q: want openai or anthropic", format)
}
