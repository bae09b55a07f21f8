// Package api is the service layer: every operation a user or an agent
// can ask of a data directory, as one typed request and response.
//
// Service holds the session queries (Sessions, Session, Events,
// Exchange, Breakers) and the memory operations (Search, Find, Get,
// Related, List, Context, Correct for forget and pin, Note), and Usage
// (tokens and cost by period, priced from codec/llm's dated table). Two
// implementations answer it: Local works in this process over an open
// engine and, for memory, its index; Remote asks the proxy that owns the
// directory over loopback HTTP (the query endpoint package httpapi
// serves). Open picks one: the running proxy when there is one, else the
// directory opened here.
//
// The operations that also need the WAL, the breaker or the agents' logs
// are functions and small types beside it: Export (show and export),
// Render (convert), ReadTrace, Replay, NextTask, Breakers (status, reset,
// trip; Remote or LocalBreakers), Importer over an ImportSink (the
// running proxy, or LocalImportSink), Backuper (backup: Remote, or Local
// over the directory opened here; OpenBackuper picks) and Restore, which
// needs no proxy since its target is a new directory. Storage (DU, GC:
// bbengine du and gc) is a second small interface that Local and Remote
// answer too; OpenStorage picks one.
//
// The CLI, the MCP server (mcpserver), the tool schemas (tools), the
// harness HTTP API (httpapi) and the hooks are adapters over these;
// none holds an operation of its own.
//
//	cli ─┐  mcpserver ─┐  tools ─┐  hooks ─┐
//	     ▼             ▼         ▼         ▼
//	               api.Service
//	          ┌──────────┴──────────┐
//	      api.Local             api.Remote ──HTTP──▶ httpapi.Server ─▶ api.Local (in the proxy)
//	   engine, index, pack
//
// Imports point down: api may import engine, agents (the registry, not
// an agent), index, pack, export, wal, proxy (for its breaker and
// helpers), the codecs and internal helpers; nothing below imports it. Local, Remote and LocalBreakers are safe for
// concurrent use.
package api
