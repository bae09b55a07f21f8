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
//
// The projects set is harder and written in the style of real work: 20
// projects, each its own working directory with two or three sessions
// over days, where decisions are reversed in the same or a later
// session, rules come as negatives and asides, questions are closed
// later, and system reminders, subagent prompts, pasted documents and
// tool output say "must" without being the user's. Each fact a next
// task needs is a card in testdata/projects/facts.json, generated from
// the declarations beside the sessions (projects_data*_test.go). The
// queries, testdata/projects/queries.json, are written by someone else
// from the cards' about lines alone. TestProjectsEval asks them as a new
// task in each project would and scores them strictly (the card's
// artifact type and status in the top 5) and leniently (its text in a
// top-5 card), with MRR, per kind, the cross-session subset, outdated
// facts presented as current, and each project's pack for a new
// session; it logs the figures against the goals of issue 19:
//
//	go test -count=1 -run TestProjectsEval -v ./bench/memeval
//	go test -run TestProjectsFacts ./bench/memeval -update  # rewrite facts.json
//
// The golden set scores the same way over real sessions: the Claude
// Code sessions of the shared golden corpus (six working directories,
// one with two sessions), with cards labelled by hand from the
// transcripts in testdata/golden/facts.json (same format, not
// generated; each status judged by what happened later in the logs)
// and next-task queries in testdata/golden/queries.json. TestGoldenFacts
// checks the cards against the corpus; TestGoldenEval imports the corpus
// and a new session per project and logs the same tables. Both skip
// when ../shared is missing:
//
//	go test -count=1 -run TestGoldenEval -v ./bench/memeval
//
// It may import every package of the module; nothing imports it.
package memeval
