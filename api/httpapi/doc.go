// Package httpapi serves api.Local over loopback HTTP: the query endpoint
// that api.Remote asks (Server, started by the proxy, its address and
// bearer token in the data directory's lock file; /v1/storage/du and
// /v1/storage/gc answer api.Storage; POST /v1/usage answers
// api.Service.Usage) and the harness API
// (Harness: packs, outcomes, checkpoints, goals, search, artifacts) on an
// address and token of its own.
//
// Every request must carry the bearer token; a request for a Host other
// than loopback, or from a web page whose origin is not allowed, is
// refused (package internal/guard). Errors are {"error": "..."} with 400
// for api.ErrBadQuery and api.ErrBadRequest, 404 for engine.ErrNotFound,
// 405 for a wrong method, else 500.
//
// It may import api, engine, index, pack, the codecs, proxy/breaker and
// internal helpers. Server and Harness are safe for concurrent use.
package httpapi
