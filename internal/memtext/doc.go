// Package memtext owns the text rules of the memory extractors: which
// sentences of a message state a decision, a constraint, a TODO, a
// blocker or an open question (Find), how a statement is keyed for
// dedupe (Normalize, Terms), which code identifiers a text names
// (Identifiers), which TODO comments a source file holds (TODOs), which
// files a shell command writes or deletes (ShellWrites, ShellDeletes),
// what a test run's output says (IsTestCommand, ParseTestResult,
// ExitCode, FirstErrorLine) and what a failed command's failure is
// (FailureKind, ErrorSignature), which items a list of work still to do
// holds (TodoList) and whether an agent says all work is done (AllDone),
// what a decision is about (Finding.Subject, SubjectOf), and the answers
// a question tool's result carries (ToolAnswers).
//
// A decision's subject is the job it decides, so that differently worded
// decisions about one job compare equal: the job of a known option it
// chooses or drops ("atlas" and "goose" are migration tools), else the
// subject the sentence names ("for the cache", "switch the logger …",
// "make the cache key …"), else a job word in it or in the sentence
// before ("to run the migrations"), else a file it names.
// Finding.SubjectFrom says which, in words.
//
// Every function is pure and deterministic: the same input gives the same
// output on every machine, with no locale, clock or randomness involved,
// because artifact ids are content hashes of what these functions return.
// They are safe for concurrent use. Results never alias the caller's
// memory in a way that matters: returned strings are Go strings (they may
// share the input's backing bytes, which Go never mutates).
//
// The rules are sentence patterns over a small tokenizer, not a parser of
// English. Find reads prose only: fenced and indented code, log and tool
// output (timestamps, level prefixes, stack frames, shell prompts and what
// follows them), diffs, quoted lines and table rows are skipped, and a
// pattern inside an inline `code span` never triggers. The rules are
// measured against testdata/labelled.jsonl (go test -run TestLabelled -v
// prints precision and recall per type).
//
// It imports nothing of bbengine's, like every internal package.
package memtext
