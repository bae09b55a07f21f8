// Package codex decodes the rollout files the OpenAI Codex CLI writes
// (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl, optionally
// zstd-compressed to .jsonl.zst), one line at a time, and counts what a
// rollout holds by the rules of a data-loss check (Count).
//
// A rollout line is an envelope
//
//	{"timestamp":"2026-02-23T19:34:26.098Z","type":<type>,"payload":{…}}
//
// with type session_meta, turn_context, response_item, event_msg or
// compacted, and since Codex 0.169 world_state and token_usage_record
// (0.169 also adds an "ordinal" to the envelope and a "metadata" to
// response items, which the package does not read). ParseLine decodes the payloads it knows into typed fields
// and keeps every payload raw, so a type it does not know (Codex adds
// some every few releases) is kept, never an error. Mid-2025
// "pre-envelope" rollouts (a header {id,timestamp,instructions,git},
// {"record_type":"state"} markers, then bare response items) are read
// too, marked Legacy.
//
// The package is stateless and safe for concurrent use.
//
// It may import other codec packages (agentlog, census) and nothing else of
// bbengine's.
package codex
