// Package memeval is the retrieval evaluation of memory: a set of
// questions a user asks about past sessions ("which file did we change
// to fix X", "what did we decide about Y", "what is still open"), each
// with the artifacts that answer it, asked through `bbengine mem search`
// over a data directory holding the golden Claude Code and Codex
// sessions (../shared/agentlogs-golden, when present) and four synthetic
// multi-task sessions.
//
// The set is testdata/memeval.json. Answers are predicates over
// artifacts (type, session, task, status, a substring, a file), resolved
// to ids when the test runs, because ids are content hashes that change
// with the extractors. The package has tests only:
//
//	go test -v -run TestMemEval ./bench/memeval      # the table, the misses; fails below recall@5 0.9
//	go test -run '^$' -bench MemEval ./bench/memeval # recall@5, recall@1 and MRR as benchmark metrics
package memeval
