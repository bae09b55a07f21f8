// Package bbox reads, writes and validates bbox/1, the line-based text
// format of an agent session (the spec is shared/spec/bbox-format.md, with
// th: thinking and td: todos from claude-code-converter-plan.md).
//
// A document is an optional YAML-style header between two --- lines (the
// first must be line 1), then one event per line:
//
//	---
//	format: bbox/1            required: format, id, repo_sha
//	id: sess_001
//	repo_sha: 7a3b2c1
//	extra.eval_suite: qa      any other key is kept in order
//	---
//	u: Fix the login bug step=1 ts=2025-12-18T03:21:08Z
//	t:read id=call_1 src/auth.rs → [186 lines]
//	  pub fn login(...)       continuation: two spaces or a tab
//	o: id=call_1 → [ok]
//	# metrics step=1 prompt_tokens=520 completion_tokens=80
//	@end
//
// # Lines
//
// The prefix decides the Kind: u a t t! t~ o s p m r x c q th td, a '#'
// comment, an '@' lifecycle verb; anything else is KindUnknown and kept
// verbatim. Named kinds (t t! t~ s p m x c @) carry a Name right after the
// prefix. Kinds that take results split at the first arrow (→ or ->) that
// is outside a double-quoted string; everything after it, arrows
// included, is the Result. Messages (u a th td), modes and comments never
// split: an arrow there is text. Nothing is lost the way the spec's
// regular expressions lose it: an id keeps its dashes, a result keeps the
// arrows inside tool output.
//
// Metadata (id, tid, span, parent, step, ts, attempt, latency_ms, level,
// extra.*) are key=value fields read from the call part by Line.Meta; in
// messages only the trailing run of key=value tokens counts. Fields reads
// any call part: quoted values with escapes, bare values that keep spaces
// inside balanced brackets (options=["a", "b"]), and an inline "# …"
// comment.
//
// # Lossless round trip
//
// Parse keeps every byte of content. Write(Parse(x)) gives the canonical
// form: LF line ends, trailing whitespace dropped, one space after an
// unnamed prefix, " → " around the separator, two-space continuation
// indent, header lines as "key: value". Parse(Write(doc)) equals doc
// (Document.Equal) for every document that passes Document.Check, which
// every parsed document does; the writers refuse, with the line, a
// hand-built document the text cannot represent. The compact form drops
// only blank lines and optional spaces; the JSONL form (see WriteJSONL)
// keeps everything but invalid UTF-8.
//
// # Validation
//
// Validate reports errors (the document cannot be trusted for replay or
// export: a missing required header key, an o: for an unknown id, a
// duplicate id, steps going backwards, a malformed timestamp) and
// warnings (an unknown prefix, a t!: never completed, a blob hash that is
// not 64 hex digits, a fragment without a header), each with file, line
// and byte column and a stable code (E1xx header, E2xx body, W…).
//
// Parsing streams: Scanner reads one line (with its continuations) at a
// time with about one allocation per line. Nothing here is safe for
// concurrent mutation; a parsed Document may be read from many goroutines.
//
// It imports nothing of bbengine's, like every codec package; package
// export turns engine sessions into bbox documents and back.
package bbox
