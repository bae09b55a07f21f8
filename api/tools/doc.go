// Package tools defines the memory tools (memory_search, memory_get,
// memory_context_for_task, memory_related) once, as typed handlers over
// api.Service, with their input and output schemas inferred from the Go
// types (jsonschema.For). The MCP server registers them (AddTo), and
// Defs renders them as OpenAI and Anthropic function definitions, so what
// a model is told and what is checked cannot drift apart. DecodeArgs
// checks a call's arguments as the MCP server does; Call runs it.
//
// It may import api, engine, pack and the MCP SDK.
package tools
