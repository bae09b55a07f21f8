// Package mcpserver serves the memory tools of package tools to agents
// over MCP (the official Go SDK), on stdio or as streamable HTTP behind a
// bearer token on loopback (HTTPHandler).
//
// New lends each tool call the service of a data directory: the running
// proxy's (api.Remote) when there is one, else the directory opened here
// (api.Local), shared by concurrent calls and let go a moment after the
// last one so that a proxy started meanwhile can take it.
//
// It may import api, api/tools, engine and internal helpers.
package mcpserver
