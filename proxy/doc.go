// Package proxy is the recording reverse proxy: agents point their base
// URL at it, it forwards each request to the provider's upstream and
// streams the response back untouched and unbuffered, while a recorder
// tees every chunk, redacted, into the WAL (record.go).
//
// Before a model call is forwarded, the circuit breaker (package
// proxy/breaker) judges it: a session stuck in a loop that makes no
// progress, or past a cap, is refused with the provider's own 429
// (breaker_glue.go). A response already streaming is never cut.
package proxy
