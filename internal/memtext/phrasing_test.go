package memtext

import "testing"

// TestFindPhrasings asks for one finding of a kind from sentences worded
// the way people write them, none copied from the examples.
func TestFindPhrasings(t *testing.T) {
	probes := []struct{ role, want, text string }{
		{"assistant", "decision", "I went with a bounded channel so producers block instead of dropping events."},
		{"assistant", "decision", "I've switched the tokenizer to the Rust implementation."},
		{"assistant", "decision", "Root cause: the pool was shared across tenants. I'll give each tenant its own pool instead."},
		{"assistant", "decision", "Rather than patching the regex, I'll parse the header with the mime package."},
		{"assistant", "decision", "I opted for a write-ahead log over periodic snapshots."},
		{"assistant", "decision", "Decided: the cache stays in-process."},
		{"assistant", "decision", "I'll move the retry logic into the client package."},
		{"assistant", "decision", "Going with approach 2: a single transaction per batch."},
		{"assistant", "decision", "I ended up using errgroup for the fan-out."},
		{"assistant", "decision", "Instead of mocking the clock, I injected a Clock interface."},
		{"user", "decision", "yes, go with the lockfile approach"},
		{"user", "decision", "Option 2 please."},
		{"user", "decision", "Let's go for zstd."},
		{"user", "decision", "use bun from now on"},
		{"user", "decision", "Let's not bother with Redis; an in-process LRU is enough."},
		{"user", "decision", "Scrap the GraphQL layer and expose plain REST."},
		{"user", "decision", "From here on we use ruff instead of flake8."},
		{"user", "decision", "Change of plan: store sessions in Postgres."},
		{"user", "decision", "Use a 30 second timeout for uploads."},
		{"user", "decision", "ok go with the second option"},
		{"user", "decision", "Let's do the migration with alembic."},
		{"user", "decision", "Please switch logging over to zap."},
		{"user", "decision", "use uv, not pip"},
		{"user", "decision", "Moving forward, deploys go through Argo."},
		{"user", "decision", "Fine-tune on the cleaned split with 2 epochs, lr 2e-5."},
		{"user", "decision", "The default branch will be main, not master."},
		{"assistant", "decision", "I replaced the hand-rolled retry loop with the SDK's built-in retries."},
		{"assistant", "decision", "Given the benchmark, I'm switching the encoder to msgpack."},
		{"user", "constraint", "Never ever commit secrets."},
		{"user", "constraint", "don't add any new deps"},
		{"user", "constraint", "Public functions must have doc comments."},
		{"user", "constraint", "Every PR needs a changelog entry."},
		{"user", "constraint", "No breaking changes to the config format."},
		{"user", "constraint", "Stay within the existing package layout."},
		{"user", "constraint", "Do not, under any circumstances, delete user data."},
		{"user", "constraint", "The wire protocol is frozen until v3."},
		{"user", "constraint", "All timestamps have to be UTC."},
		{"user", "constraint", "Prod is off limits."},
		{"user", "constraint", "You're not allowed to run migrations against prod."},
		{"user", "constraint", "Make sure nothing writes outside the temp dir."},
		{"assistant", "question", "Would you prefer the flag on by default?"},
		{"assistant", "question", "Two options here: (a) keep the cache or (b) drop it. Which should I go with?"},
		{"assistant", "question", "Shall I proceed with the migration?"},
		{"assistant", "question", "Do you want me to also update the docs, or leave them?"},
		{"assistant", "todo", "Still to do: the Windows installer."},
		{"assistant", "todo", "Next steps: wire the exporter and add a CLI flag."},
		{"assistant", "blocker", "I can't continue without the staging DB password."},
		{"user", "decision", "Let's use Postgres for the job store."},
		{"user", "decision", "We're going with Kafka for the event bus."},
		{"user", "decision", "Okay, switch the HTTP client over to reqwest."},
		{"user", "decision", "On second thought, keep the JSON config; forget YAML."},
		{"user", "decision", "Drop the retry wrapper — the SDK retries on its own."},
		{"user", "decision", "Please use structlog instead of the stdlib logging module."},
		{"user", "decision", "Go with option B."},
		{"user", "decision", "I'd rather we use SQLite here."},
		{"user", "decision", "Let's move the config parsing into its own package."},
		{"user", "decision", "We'll ship with the feature flag off by default."},
		{"user", "decision", "Use 4 workers for the ingestion pool."},
		{"user", "decision", "Prefer composition over inheritance for the handlers."},
		{"user", "decision", "The cache key should be the tenant id, not the user id."},
		{"user", "decision", "Rate limit per API key rather than per IP."},
		{"user", "decision", "Use port 8081 for the admin server."},
		{"user", "decision", "Run the migrations with goose from now on."},
		{"user", "decision", "Revert the ORM change and go back to raw SQL."},
		{"user", "decision", "Replace moment.js with date-fns."},
		{"user", "decision", "Let's standardize on pnpm."},
		{"user", "decision", "Evaluate with temperature 0 and top_p 1."},
		{"user", "decision", "Benchmark it using 8 threads and a 64 MB buffer."},
		{"assistant", "decision", "I went with a ring buffer instead of a linked list, since the size is fixed."},
		{"assistant", "decision", "I've decided to keep the lock-free queue."},
		{"assistant", "decision", "After digging into the profiles, I'll switch the parser to a streaming one."},
		{"assistant", "decision", "I chose to store timestamps as UTC."},
		{"user", "constraint", "Never log customer emails."},
		{"user", "constraint", "Don't touch the public API."},
		{"user", "constraint", "All new endpoints need to be behind auth."},
		{"user", "constraint", "No new dependencies without asking me first."},
		{"user", "constraint", "Keep the binary under 20 MB."},
		{"user", "constraint", "Tests must run offline."},
		{"user", "constraint", "You may not change the database schema."},
		{"user", "constraint", "Avoid reflection in the hot path."},
		{"user", "constraint", "It's important that the CLI stays backwards compatible."},
		{"user", "constraint", "The on-disk format can't change."},
		{"user", "constraint", "Only ever write to the data dir through the store package."},
		{"user", "constraint", "Make sure every error is wrapped with context."},
		{"user", "constraint", "Please keep the wire format backwards compatible."},
		{"user", "constraint", "Under no circumstances force-push to main."},
		{"user", "constraint", "Migrations are append-only; never edit an applied one."},
		{"assistant", "question", "Should I also bump the version?"},
		{"assistant", "question", "Which of the two approaches do you prefer?"},
		{"assistant", "question", "Do you want me to open a PR?"},
		{"assistant", "question", "One open point: is the 30s timeout acceptable for uploads?"},
		{"assistant", "question", "I can either inline it or extract a helper — which would you like?"},
		{"assistant", "question", "Not sure whether you want the legacy flag kept; let me know."},
		{"assistant", "todo", "Remaining: wire the exporter into the CLI."},
		{"assistant", "todo", "I haven't added tests for the CSV path yet."},
		{"assistant", "todo", "The Windows build is still broken."},
		{"assistant", "blocker", "I'm blocked on the staging credentials."},
	}
	for _, p := range probes {
		got := ""
		for _, f := range Find(p.text, FindOptions{Role: p.role, Questions: p.role == "assistant"}) {
			got += string(f.Type) + " "
		}
		ok := false
		for _, f := range Find(p.text, FindOptions{Role: p.role, Questions: p.role == "assistant"}) {
			if string(f.Type) == p.want {
				ok = true
			}
		}
		if !ok {
			t.Errorf("Find(%q, %s) = [%s], want a %s", p.text, p.role, got, p.want)
		}
	}
}

// TestFindPhrasingNegatives are sentences near the patterns of
// TestFindPhrasings that state nothing to remember.
func TestFindPhrasingNegatives(t *testing.T) {
	probes := []struct{ role, text string }{
		{"user", "Keep going."},
		{"user", "Keep in mind the API is slow."},
		{"user", "Keep the diff small."},
		{"assistant", "Don't forget to restart the server."},
		{"assistant", "Make sure you have Node 18 installed."},
		{"assistant", "Always run `npm install` after switching branches."},
		{"assistant", "You must restart the dev server for the change to apply."},
		{"user", "Now drop duplicate rows before saving."},
		{"user", "Drop records with a null id."},
		{"assistant", "Instead of guessing, I checked the logs."},
		{"assistant", "Rather than that, I think we should wait for CI."},
		{"assistant", "I'll run the tests instead."},
		{"assistant", "I ended up with a flaky test."},
		{"user", "Option A is faster but riskier, what do you think?"},
		{"user", "Every time I run it, it needs a restart."},
		{"user", "No changes were needed in the parser."},
		{"user", "The lights are off."},
		{"assistant", "Next steps: none."},
		{"user", "Use the existing helpers from the util package."},
		{"user", "Going back to the original question, the parser is fine."},
		{"assistant", "Let me know when you have decided."},
		{"user", "keep it up"},
		{"user", "The tests can't find the fixture file."},
		{"user", "It can't change anything, it's read only."},
		{"user", "I can't reproduce it locally."},
		{"user", "You can't see the logs from here, right?"},
		{"user", "We need to fix the login bug."},
		{"user", "The tests need to be fixed."},
		{"user", "Tests need to pass before you're done."},
		{"user", "No worries, take your time."},
		{"user", "No rush."},
		{"user", "Only one test fails on CI."},
		{"user", "It's important that we understand why it fails."},
		{"user", "The result is 42, not 41."},
		{"user", "That is fine, not a problem."},
		{"user", "The problem is the cache, not the DB."},
		{"user", "Forget it."},
		{"user", "Forget about the docs for now."},
		{"user", "Revert to it later."},
		{"user", "Prefer whatever you think is best."},
		{"user", "Avoid."},
		{"user", "Run the tests rather than guessing."},
		{"user", "Look at the logs instead of the metrics."},
		{"user", "Why is it slow instead of fast?"},
		{"assistant", "I'll keep the existing behaviour."},
		{"assistant", "Avoid calling this in a loop."},
		{"assistant", "The endpoint can't change its response shape without a version bump."},
		{"assistant", "Remaining: nothing."},
		{"assistant", "I haven't checked the logs yet."},
		{"assistant", "The build is still running."},
		{"assistant", "Not sure why it failed; let me know if you see it again."},
		{"user", "Let's move on."},
		{"user", "We'd rather not."},
		{"user", "The handler is the bottleneck rather than the DB."},
	}
	for _, p := range probes {
		var got []string
		for _, f := range Find(p.text, FindOptions{Role: p.role, Questions: p.role == "assistant"}) {
			got = append(got, string(f.Type))
		}
		if len(got) > 0 {
			t.Errorf("Find(%q, %s) = %v, want nothing", p.text, p.role, got)
		}
	}
}
