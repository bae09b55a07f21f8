package llm

import "errors"

// Placeholder until the Chat decoder lands; replaced by its owner.
var errChatPending = errors.New("decoder not written yet")

func decodeChatRequest(body []byte) (*Request, error) { return nil, errChatPending }

func decodeChatResponse(body []byte) (*Response, error) { return nil, errChatPending }
