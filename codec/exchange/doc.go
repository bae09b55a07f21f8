// Package exchange defines the payloads of the WAL frames the proxy writes
// for one HTTP exchange between an agent and its model provider, and their
// JSON encoding. Body chunk frames carry the (redacted) body bytes as they
// were sent; the start, end and error frames carry one JSON object each:
//
//	request start   RequestStart   method, path, query, headers, ids, client
//	request body    raw bytes      one chunk as it arrived from the client
//	response start  ResponseStart  status, headers, time to first byte
//	response body   raw bytes      one chunk as it arrived from the upstream
//	response end    ResponseEnd    durations, byte counts, usage if seen
//	error           Error          what failed, where, and what had arrived
//
// Every field is optional on decode, so older readers skip newer fields
// and newer readers accept older frames. Version is 1.
//
// It may import other codec packages (frame) and nothing else of bbengine's.
package exchange
