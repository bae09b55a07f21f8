package llm

import "errors"

// Placeholder until the Responses decoder lands; replaced by its owner.
var errResponsesPending = errors.New("decoder not written yet")

func decodeResponsesRequest(body []byte) (*Request, error) { return nil, errResponsesPending }

func decodeResponsesResponse(body []byte) (*Response, error) { return nil, errResponsesPending }
