package llm

import "errors"

// Placeholder until the Anthropic decoder lands; replaced by its owner.
var errAnthropicPending = errors.New("decoder not written yet")

func decodeAnthropicRequest(body []byte) (*Request, error) { return nil, errAnthropicPending }

func decodeAnthropicResponse(body []byte) (*Response, error) { return nil, errAnthropicPending }
