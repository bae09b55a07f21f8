// Package api is the service layer: every operation a user or an agent
// can ask of a data directory, as one typed request and response, behind
// one interface, Service.
//
// Two implementations answer it. Local works in this process over an
// open engine (and, for memory, its index); Remote asks the proxy that
// owns the directory over loopback HTTP, the query endpoint that package
// httpapi serves. Open picks one: the running proxy when there is one,
// else the directory opened here. The CLI, the MCP server (mcpserver),
// the tool schemas (tools), the harness HTTP API (httpapi) and the hooks
// are adapters over Service; none holds an operation of its own.
//
//	cli ─┐  mcpserver ─┐  tools ─┐  hooks ─┐
//	     ▼             ▼         ▼         ▼
//	               api.Service
//	          ┌──────────┴──────────┐
//	      api.Local             api.Remote ──HTTP──▶ httpapi.Server ─▶ api.Local (in the proxy)
//	   engine, index, pack
//
// Imports point down: api may import engine, index, pack, wal, the codecs
// and internal helpers; nothing below imports it. Local and Remote are
// safe for concurrent use.
package api
