package llm

import "errors"

// Placeholder until the Gemini decoder lands; replaced by its owner.
var errGeminiPending = errors.New("decoder not written yet")

func decodeGeminiRequest(body []byte) (*Request, error) { return nil, errGeminiPending }

func decodeGeminiResponse(body []byte) (*Response, error) { return nil, errGeminiPending }
