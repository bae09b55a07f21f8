// Package layers holds the import map of bbengine as a table and checks
// the module's packages against it: imports only point down. Its test
// runs `go list -json` over the module (skipped when the go tool is not
// there) and fails naming every import that points up or sideways, and
// every package the table does not place; CI runs it with go test ./....
//
// The map, lowest first (docs/architecture.md explains it):
//
//	codec/*, internal/*         pure formats, private helpers
//	wal, proxy/breaker
//	engine/schema               the domain types and key layout
//	engine/derive               the derivation pipeline
//	engine, wal/walbench
//	agents                      the Agent interface and registry
//	export, index, pack, proxy  peers: never import each other
//	agents/*                    one directory per agent
//	api                         the service layer and its adapters
//	server, runner              the proxy and the engine beside it, MCP;
//	                            an agent's run for one task
//	cli
//	main, bench, e2e, fuzz
//
// Only the packages' own imports count, not their tests': an external
// test package may import what sits above its package (agents_test
// imports agents/all to find the agents registered).
//
// It imports nothing of bbengine's; nothing imports it.
package layers
