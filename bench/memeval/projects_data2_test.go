package memeval

// projHandbook: an internal docs site moving generators, with a subagent
// prompt and a system reminder as distractors and a link checker left
// failing.
func projHandbook() *proj {
	p := newProj(11, "handbook")
	l := p.session(day(9, 22, 10, 0))
	l.user("The handbook is on Hugo. I want to migrate it to Docusaurus so we get versioned docs and MDX. Plan it first.")
	l.task("Inventory Hugo shortcodes", "Explore", "List every Hugo shortcode used under content/. You MUST provide the FULL list with counts. Do NOT skip any directory. Always answer in a markdown table.", "| shortcode | uses |\n|---|---|\n| notice | 41 |\n| figure | 17 |\n| tabs | 6 |")
	p.distract("explore-prompt", "instructions the assistant wrote for a helper agent that listed template snippets", "You MUST provide the FULL list with counts")
	l.plan(lines("## Hugo → Docusaurus",
		"1. Move the handbook to Docusaurus: convert content/ to docs/ with a script; shortcodes notice→admonitions, figure→MDX <Figure>, tabs→<Tabs>.",
		"2. Versioned docs start at 2026.10.",
		"3. Redirects from old /handbook/* URLs via the Netlify _redirects file."))
	p.decision("docusaurus", "active", "approved move to a different static site generator", "Move the handbook to Docusaurus")
	p.decision("redirects", "active", "how old page addresses keep working after the move", "Redirects from old /handbook/* URLs via the Netlify _redirects file")
	l.write("", "/home/dev/handbook/scripts/convert.mjs", "// convert.mjs turns Hugo content into Docusaurus MDX.\nfor (const f of glob('content/**/*.md')) { writeMdx(convertShortcodes(read(f))) }\n")
	p.change("convert", "script translating pages to the new format", "scripts/convert.mjs")
	l.reminder("As you answer the user's questions, you can use the following context:\n# important-instruction-reminders\nDo what has been asked; nothing more, nothing less.\nNEVER create files unless they're absolutely necessary for achieving your goal.\nALWAYS prefer editing an existing file to creating a new one.")
	p.distract("claudemd-reminder", "harness-injected general guidance about creating files", "NEVER create files unless they're absolutely necessary")
	l.bash("", "node scripts/convert.mjs && npm run build", "[ERROR] Docusaurus found broken links!\n- Broken link on source page path = /docs/onboarding/laptop:\n   -> linking to ../security/vpn.md\nExit code 1", true)
	p.thread("broken-links", "closed", "site build refuses to finish because of dead internal references", "Docusaurus found broken links")
	l.say("The conversion ran; the build fails on broken relative links like ../security/vpn.md.")

	l = p.session(day(9, 26, 13, 0))
	l.user("Fix the links. Page slugs are public URLs people bookmark, so no slug changes, ever.")
	p.rule("slugs", "active", "page address stability promise", "no slug changes, ever")
	l.edit("", "/home/dev/handbook/scripts/convert.mjs", "writeMdx(convertShortcodes(read(f)))", "writeMdx(rewriteRelativeLinks(convertShortcodes(read(f))))")
	l.bash("", "node scripts/convert.mjs && npm run build", "[SUCCESS] Generated static files in \"build\".", false)
	l.say("The build succeeds: relative .md links are rewritten to doc ids during conversion.")
	l.say("Lesson learned: restarting the dev server does not pick up converted pages; rerun the converter instead.")
	p.distractThread("lesson", "a lesson the assistant drew about the local preview, not a pending item", "restarting the dev server does not pick up converted pages")
	p.outcome("links-fixed", "success", "site build works again after rewriting internal references", "relative .md links are rewritten to doc ids")
	p.closes("links-fixed", "broken-links")
	l.user("Search: Algolia DocSearch or the local search plugin? Let me check with the security folks whether Algolia is allowed, park it.")
	p.thread("search-choice", "open", "pending choice between a hosted and a self-contained site search, waiting on a review", "Algolia DocSearch or the local search plugin")
	return p
}

// projGameserver: a C++ game server. The build switches from Make to
// CMake presets; a sanitizer failure; a tick-rate setting revised.
func projGameserver() *proj {
	p := newProj(12, "arena-server")
	l := p.session(day(9, 25, 19, 0))
	l.user("Replace the Makefile with CMake presets (debug, release, asan). Keep C++20.")
	p.decision("cmake", "active", "build system now used for the server", "Replace the Makefile with CMake presets")
	p.rule("cxx20", "active", "language standard level to keep", "Keep C++20")
	l.read("/home/dev/arena-server/Makefile", "CXXFLAGS=-std=c++20 -O2 -Wall\nserver: $(OBJS)\n\t$(CXX) -o $@ $^\n\n<system-reminder>\nWhenever you read a file, you should consider whether it would be considered malware. You MUST refuse to improve or augment the code if it is malware.\n</system-reminder>\n")
	p.distract("malware-reminder", "harness note appended to a file read about refusing harmful code", "You MUST refuse to improve or augment the code")
	l.write("", "/home/dev/arena-server/CMakePresets.json", "{\n  \"version\": 6,\n  \"configurePresets\": [\n    {\"name\": \"debug\"}, {\"name\": \"release\"},\n    {\"name\": \"asan\", \"cacheVariables\": {\"CMAKE_CXX_FLAGS\": \"-fsanitize=address,undefined\"}}\n  ]\n}\n")
	p.change("presets", "build configurations file", "CMakePresets.json")
	l.bash("", "cmake --preset asan && cmake --build --preset asan && ctest --preset asan", "==31337==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020000000f0\n    #0 0x55d1 in Session::onDisconnect() src/net/session.cpp:142\n    #1 0x55e2 in Lobby::kick(PlayerId) src/lobby.cpp:88\n1/12 Test #4: lobby_kick ......***Failed\nExit code 8", true)
	p.thread("uaf", "closed", "memory checker finds an object used after being freed when removing a player", "heap-use-after-free")
	l.edit("Maybe it's the iterator being reused after erase.", "/home/dev/arena-server/src/lobby.cpp", "for (auto it = sessions_.begin(); it != sessions_.end(); ++it)", "for (auto it = sessions_.begin(); it != sessions_.end();)")
	l.bash("", "cmake --build --preset asan && ctest --preset asan", "==31340==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020000000f0\n    #0 0x55d1 in Session::onDisconnect() src/net/session.cpp:142\n    #1 0x55e2 in Lobby::kick(PlayerId) src/lobby.cpp:88\n1/12 Test #4: lobby_kick ......***Failed\nExit code 8", true)
	l.say("ASan finds a heap-use-after-free in Session::onDisconnect when Lobby::kick erases the session first; the iterator change didn't help.")
	l.user("Server tick rate 30 Hz for now.")
	p.decision("tick-30", "superseded", "first simulation update frequency", "tick rate 30 Hz")

	l = p.session(day(10, 2, 20, 0))
	l.user("Playtesters say hit registration feels off. Bump the tick to 60 Hz, and the snapshot rate stays at 20.")
	p.decision("tick-60", "active", "simulation update frequency now in force", "Bump the tick to 60 Hz")
	p.replaces("tick-60", "tick-30")
	p.decision("snapshot", "active", "how often world state is sent to players", "the snapshot rate stays at 20")
	l.edit("", "/home/dev/arena-server/src/lobby.cpp", "sessions_.erase(id);\n  s->onDisconnect();", "auto s = std::move(sessions_.extract(id).mapped());\n  s->onDisconnect();")
	p.change("lobby", "fix in the player removal code", "src/lobby.cpp")
	l.bash("", "cmake --build --preset asan && ctest --preset asan", "100% tests passed, 0 tests failed out of 12", false)
	l.say("lobby_kick passes under ASan now: the session is extracted from the map before onDisconnect runs.")
	p.outcome("uaf-fixed", "success", "memory-safety test of player removal passes", "extracted from the map before onDisconnect runs")
	p.closes("uaf-fixed", "uaf")
	l.user("Never allocate on the hot tick path. Use the frame arena.")
	p.rule("no-alloc", "active", "memory allocation restriction in the per-frame simulation loop", "Never allocate on the hot tick path")
	l.say("Should the arena be reset per tick or per snapshot? Per tick is simpler, per snapshot lets interpolation data live longer.")
	p.thread("arena-reset", "open", "open question on when the per-frame scratch memory is cleared", "reset per tick or per snapshot")
	return p
}

// projWarehouse: a dbt project. Incremental strategy decided and
// corrected; a naming rule; a question answered in the next session.
func projWarehouse() *proj {
	p := newProj(13, "warehouse")
	l := p.session(day(9, 27, 9, 0))
	l.user("fct_sessions takes 40 minutes. Make it incremental with the append strategy, partitioned by event_date.")
	p.decision("incr-1", "superseded", "first way new rows were added to the big sessions fact table", "incremental with the append strategy")
	l.read("/home/dev/warehouse/models/marts/fct_sessions.sql", "{{ config(materialized='table') }}\nselect * from {{ ref('stg_events') }}\n")
	l.edit("", "/home/dev/warehouse/models/marts/fct_sessions.sql", "{{ config(materialized='table') }}", "{{ config(materialized='incremental', incremental_strategy='append', partition_by={'field': 'event_date', 'data_type': 'date'}) }}")
	l.bash("", "dbt build -s fct_sessions", "1 of 2 OK created sql incremental model analytics.fct_sessions [INSERT 0 1822003 in 96.11s]\n2 of 2 FAIL 1 unique_fct_sessions_session_id [FAIL 1204 in 3.02s]\nExit code 1", true)
	p.thread("unique-fail", "closed", "uniqueness test on the sessions fact table finds duplicates", "unique_fct_sessions_session_id")
	l.say("Append re-inserts late-arriving sessions, so unique_fct_sessions_session_id fails with 1204 duplicates. merge on session_id would fix that.")
	l.user("Right, append was wrong for this. Use merge keyed on session_id.")
	p.decision("incr-2", "active", "current way rows are added to the sessions fact table", "Use merge keyed on session_id")
	p.replaces("incr-2", "incr-1")
	l.edit("", "/home/dev/warehouse/models/marts/fct_sessions.sql", "incremental_strategy='append'", "incremental_strategy='merge', unique_key='session_id'")
	p.change("fct", "model file of the sessions fact table", "models/marts/fct_sessions.sql")
	l.bash("", "dbt build -s fct_sessions", "1 of 2 OK created sql incremental model analytics.fct_sessions [MERGE 20114 in 41.50s]\n2 of 2 PASS unique_fct_sessions_session_id\nCompleted successfully", false)
	p.outcome("merge-ok", "success", "build of the sessions fact table passes its tests and how fast", "MERGE 20114 in 41.50s")
	p.closes("merge-ok", "unique-fail")
	l.user("FYI the CI job runs dbt build on the modified models only and posts the row-count diff as a PR comment.")
	p.distract("ci-dbt", "user's plain account of what the automated checks do, not a rule", "posts the row-count diff as a PR comment")
	l.say("Good to know; the merge change will show up in that diff.")
	l.user("Convention, please follow it: staging models are stg_<source>__<table>, marts are fct_/dim_, nothing else gets merged.")
	p.rule("naming", "active", "required naming scheme for transformation models", "staging models are stg_<source>__<table>")
	l.say("Noted. Open point: should late events older than 3 days still be merged, or do we cap the lookback window?")
	p.thread("lookback", "closed", "how far back late-arriving records are reprocessed, asked by the assistant", "cap the lookback window")

	l = p.session(day(10, 4, 10, 0))
	l.user("On the lookback question: cap it at 3 days, anything later is picked up by the weekly full refresh.")
	p.decision("lookback-3", "active", "window of days reprocessed on each incremental run", "cap it at 3 days")
	p.closes("lookback-3", "lookback")
	l.edit("", "/home/dev/warehouse/models/marts/fct_sessions.sql", "where event_date >= (select max(event_date) from {{ this }})", "where event_date >= (select max(event_date) - interval 3 day from {{ this }})")
	l.bash("", "dbt run-operation generate_docs_check", "Warning: 3 models have no description. Models must always be documented (rule: docs_required).\nNever merge a model without tests.", false)
	p.distract("macro-output", "output of a checking macro that prints policy text", "Never merge a model without tests")
	l.say("The lookback is now 3 days. The docs check warns that 3 models lack descriptions.")
	p.thread("undocumented", "open", "several transformation models still lack descriptions", "3 models have no description")
	return p
}

// projAuth: a Go auth service. The token signing algorithm changes in a
// later session; a TTL config key; a logging rule.
func projAuth() *proj {
	p := newProj(14, "authsvc")
	l := p.session(day(9, 28, 8, 30))
	l.user("Issue access tokens as JWTs signed with RS256, 2048-bit keys from the KMS. Access token lifetime is the config key auth.access_ttl, default 15m.")
	p.decision("rs256", "superseded", "first signature algorithm for issued bearer credentials", "signed with RS256")
	p.decision("ttl", "active", "setting name and default for how long a bearer credential is valid", "auth.access_ttl, default 15m")
	l.write("", "/home/dev/authsvc/token/issue.go", "// Issue signs an access token for sub with the current KMS key.\nfunc (i *Issuer) Issue(sub string) (string, error) {\n\treturn jwt.NewWithClaims(jwt.SigningMethodRS256, i.claims(sub)).SignedString(i.key)\n}\n")
	p.change("issue", "file that mints credentials", "token/issue.go")
	l.user("Add a sessions table for refresh tokens. Schema changes in this service are applied by dbmate in the deploy job, so just add the migration file.")
	p.decision("dbmate", "active", "which program applies database schema versions for this service", "applied by dbmate in the deploy job")
	l.write("", "/home/dev/authsvc/db/migrations/20260928083000_refresh_sessions.sql", "-- migrate:up\nCREATE TABLE refresh_sessions (\n  id uuid PRIMARY KEY,\n  user_id uuid NOT NULL,\n  token_hash bytea NOT NULL,\n  expires_at timestamptz NOT NULL\n);\n-- migrate:down\nDROP TABLE refresh_sessions;\n")
	p.change("refresh-table", "new table for long-lived credential records", "20260928083000_refresh_sessions.sql")
	l.user("And refresh tokens are never written to logs, not even truncated.")
	p.rule("refresh-logs", "active", "what must be kept out of diagnostic output for long-lived credentials", "refresh tokens are never written to logs")
	l.bash("", "go test ./token/", "--- FAIL: TestIssueVerifyRoundTrip (0.00s)\n    issue_test.go:31: verify: token has invalid claims: token is expired\nFAIL\nExit code 1", true)
	p.thread("roundtrip", "closed", "the test that creates then checks a credential reports it as expired", "TestIssueVerifyRoundTrip")
	l.say("TestIssueVerifyRoundTrip fails: the test clock is a fixed 2024 date, so freshly issued tokens look expired.")

	l = p.session(day(10, 6, 9, 0))
	l.user("Platform security wants smaller tokens and faster verification. Move token signing to Ed25519 (EdDSA); keep accepting RS256 for verification until Nov 30 so outstanding tokens don't break.")
	p.decision("eddsa", "active", "signature algorithm now used to mint bearer credentials", "Move token signing to Ed25519 (EdDSA)")
	p.replaces("eddsa", "rs256")
	p.decision("dual-verify", "active", "transition window accepting the older signatures", "keep accepting RS256 for verification until Nov 30")
	l.edit("", "/home/dev/authsvc/token/issue.go", "jwt.SigningMethodRS256", "jwt.SigningMethodEdDSA")
	l.edit("", "/home/dev/authsvc/token/issue_test.go", "now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)", "now := time.Now()")
	l.bash("", "go test ./token/", "ok  \tgithub.com/acme/authsvc/token\t0.019s", false)
	l.say("token tests pass; the round trip uses the real clock now and tokens are signed with EdDSA.")
	p.outcome("roundtrip-ok", "success", "the create-then-check credential test passes after the clock change", "the round trip uses the real clock now")
	p.closes("roundtrip-ok", "roundtrip")
	l.user("The /oauth/token response format is frozen for the partner integrations, don't touch field names.")
	p.rule("oauth-frozen", "active", "stability of the response shape of the credential endpoint", "response format is frozen for the partner integrations")
	l.say("Should the JWKS endpoint publish both keys during the overlap, or only the new one with RS256 kept internal?")
	p.thread("jwks", "open", "open question on which public keys the key-discovery endpoint lists during the transition", "publish both keys during the overlap")
	return p
}

// projTelemetry: an OpenTelemetry collector config. The sampling ratio
// changes twice across sessions; the exporter is decided via a question.
func projTelemetry() *proj {
	p := newProj(15, "otel-config")
	l := p.session(day(9, 29, 11, 0))
	l.user("Trace volume is killing the budget. Add tail sampling: keep all errors, sample the rest at 10%.")
	p.decision("sample-10", "superseded", "first share of ordinary traces retained", "sample the rest at 10%")
	p.decision("keep-errors", "active", "which traces are always retained regardless of ratio", "keep all errors")
	l.write("", "/home/dev/otel-config/collector/tail_sampling.yaml", "processors:\n  tail_sampling:\n    policies:\n      - name: errors\n        type: status_code\n        status_code: {status_codes: [ERROR]}\n      - name: rest\n        type: probabilistic\n        probabilistic: {sampling_percentage: 10}\n")
	p.change("tail", "sampling processor config", "collector/tail_sampling.yaml")
	l.askUser("Which backend should the collector export to?", "Exporter", "Where should sampled traces go?", []string{"Tempo via OTLP", "Jaeger", "vendor SaaS"}, "Tempo via OTLP")
	p.decision("exporter", "active", "trace storage destination the user picked from offered options", "Tempo via OTLP")
	l.bash("", "otelcol-contrib validate --config collector/config.yaml", "Error: failed to build pipelines: service::pipelines::traces: references processor \"tail_sampling\" which is not configured\nExit code 1", true)
	p.thread("pipeline-ref", "closed", "config validation complains a pipeline names an undefined processor", "references processor \"tail_sampling\" which is not configured")
	l.say("Validation fails: the traces pipeline references tail_sampling but config.yaml doesn't include tail_sampling.yaml.")

	l = p.session(day(10, 3, 14, 0))
	l.user("Finance is still unhappy. Go down to 5% for the non-error traces. Also include the sampling file properly.")
	p.decision("sample-5", "superseded", "second share of ordinary traces retained, later revised", "Go down to 5% for the non-error traces")
	p.replaces("sample-5", "sample-10")
	l.edit("", "/home/dev/otel-config/collector/config.yaml", "processors:\n", "processors:\n  ${file:collector/tail_sampling.yaml}\n")
	l.bash("", "otelcol-contrib validate --config collector/config.yaml", "", false)
	l.say("The config validates cleanly now that tail_sampling.yaml is included.")
	p.outcome("validates", "success", "collector config check passes after including the sampling file", "The config validates cleanly")
	p.closes("validates", "pipeline-ref")

	l = p.session(day(10, 10, 9, 0))
	l.user("SREs complained they can't debug p99 latency at 5%. Compromise: 8% baseline, plus keep every trace slower than 2s.")
	p.decision("sample-8", "active", "current share of ordinary traces retained", "8% baseline")
	p.replaces("sample-8", "sample-5")
	p.decision("slow", "active", "latency threshold above which traces are always retained", "keep every trace slower than 2s")
	l.edit("", "/home/dev/otel-config/collector/tail_sampling.yaml", "sampling_percentage: 5", "sampling_percentage: 8\n      - name: slow\n        type: latency\n        latency: {threshold_ms: 2000}")
	l.user("Collector config changes go through the staging collector for 24h before prod. That's the rule.")
	p.rule("staging-24h", "active", "soak period required before rolling telemetry pipeline changes to production", "staging collector for 24h before prod")
	return p
}

// projJobs: an Elixir app using Oban. Queue concurrency decided, a rule
// about emails, a failing job fixed later, a "Still need to" list.
func projJobs() *proj {
	p := newProj(16, "notify")
	l := p.session(day(10, 1, 9, 0))
	l.user("Move email sending out of the request path into Oban jobs. Queue mailers with concurrency 10.")
	p.decision("oban", "active", "background job library used for outgoing mail", "into Oban jobs")
	p.decision("conc-10", "superseded", "first parallelism setting of the mail queue", "Queue mailers with concurrency 10")
	l.write("", "/home/dev/notify/lib/notify/workers/send_email.ex", "defmodule Notify.Workers.SendEmail do\n  use Oban.Worker, queue: :mailers, max_attempts: 5\n\n  @impl true\n  def perform(%Oban.Job{args: %{\"id\" => id}}), do: Notify.Mailer.deliver(id)\nend\n")
	p.change("worker", "worker module for outgoing mail", "lib/notify/workers/send_email.ex")
	l.user("Marketing emails must never go to users who unsubscribed, check the suppression list at send time, not at enqueue time.")
	p.rule("suppression", "active", "when the opt-out list has to be checked for promotional mail", "check the suppression list at send time")
	l.task("Review the worker", "code-reviewer", "You are the reviewer on this change. Rules for your review: every Oban worker must set unique: [period: 60]; always flag missing telemetry; never approve a worker without a test.", "Review: SendEmail has no unique option; telemetry events present; test exists.")
	p.distract("reviewer-prompt", "rules the assistant wrote for a reviewing helper agent", "every Oban worker must set unique: [period: 60]")
	l.bash("", "mix test test/workers/send_email_test.exs", "  1) test retries on SMTP 4xx (Notify.Workers.SendEmailTest)\n     ** (MatchError) no match of right hand side value: {:error, :temporary}\n     test/workers/send_email_test.exs:22\n\nFinished in 0.4 seconds\n3 tests, 1 failure\nExit code 2", true)
	p.thread("smtp-4xx", "closed", "test of retrying transient mail server rejections fails with a pattern error", "retries on SMTP 4xx")
	l.compact(lines("Summary of the work so far:",
		"- Email sending now runs in the :mailers Oban queue (concurrency 10).",
		"- The user requires the suppression check at send time.",
		"Still need to:",
		"- make perform/1 return {:snooze, 60} on temporary SMTP errors",
		"- add a Grafana panel for queue depth",
		"- decide whether transactional mail gets its own queue"))
	p.thread("snooze", "closed", "pending: the worker should back off on transient failures", "return {:snooze, 60} on temporary SMTP errors")
	p.thread("grafana", "open", "pending dashboard for how many jobs are waiting", "add a Grafana panel for queue depth")
	p.thread("txn-queue", "closed", "pending choice on separating receipt-type mail into its own line", "decide whether transactional mail gets its own queue")

	l = p.session(day(10, 8, 10, 0))
	l.user("Continue the mail work: do the snooze, and yes, transactional mail gets its own queue with concurrency 20; marketing stays on mailers but drop it to 5.")
	p.decision("txn", "active", "separate line for receipt-type mail and its parallelism", "transactional mail gets its own queue with concurrency 20")
	p.closes("txn", "txn-queue")
	p.decision("conc-5", "active", "current parallelism of the promotional mail queue", "drop it to 5")
	p.replaces("conc-5", "conc-10")
	l.edit("", "/home/dev/notify/lib/notify/workers/send_email.ex", "def perform(%Oban.Job{args: %{\"id\" => id}}), do: Notify.Mailer.deliver(id)", "def perform(%Oban.Job{args: %{\"id\" => id}}) do\n    case Notify.Mailer.deliver(id) do\n      {:error, :temporary} -> {:snooze, 60}\n      other -> other\n    end\n  end")
	l.edit("", "/home/dev/notify/config/config.exs", "queues: [mailers: 10]", "queues: [mailers: 5, transactional: 20]")
	p.change("config", "queue settings in the app config", "config/config.exs")
	l.bash("", "mix test test/workers/send_email_test.exs", "Finished in 0.3 seconds\n3 tests, 0 failures", false)
	l.say("All three worker tests pass; temporary SMTP errors snooze the job for 60 seconds.")
	p.outcome("snooze-ok", "success", "mail worker tests pass with the back-off behavior", "temporary SMTP errors snooze the job for 60 seconds")
	p.closes("snooze-ok", "snooze")
	p.closes("snooze-ok", "smtp-4xx")
	return p
}

// projThumbs: a Python image service on Lambda. The image library
// changes; memory setting in a task request; pasted AWS docs.
func projThumbs() *proj {
	p := newProj(17, "thumbs")
	l := p.session(day(10, 2, 12, 0))
	l.user("Deploy the thumbnailer lambda with 1024 MB memory and a 20 s timeout, arm64. It uses Pillow for resizing.")
	p.decision("lambda-mem", "superseded", "first function memory size", "1024 MB memory")
	p.decision("arch", "active", "processor architecture of the function", "arm64")
	p.decision("pillow", "superseded", "first library doing the picture resizing", "It uses Pillow for resizing")
	l.write("", "/home/dev/thumbs/template.yaml", "Resources:\n  Thumbnailer:\n    Type: AWS::Serverless::Function\n    Properties:\n      MemorySize: 1024\n      Timeout: 20\n      Architectures: [arm64]\n")
	p.change("template", "infrastructure template of the function", "template.yaml")
	l.user("From the AWS docs, FYI:\n\"Your function must not write to any path except /tmp. Functions should always be idempotent because events can be delivered more than once.\"")
	p.distract("aws-docs", "pasted cloud provider documentation about writable paths", "must not write to any path except /tmp")
	l.bash("", "sam deploy --no-confirm-changeset && ./scripts/bench.sh 200", "Successfully created/updated stack - thumbs in us-east-1\np50 1840ms p99 7420ms  (200 images, 12 MP jpeg)", false)
	l.say("p99 is 7.4 s on 12 MP JPEGs. Pillow decodes the full image before resizing; libvips via pyvips streams and would be much faster.")
	p.thread("slow-p99", "closed", "tail latency of the resizer on large photos is too high", "p99 is 7.4 s")

	l = p.session(day(10, 9, 15, 0))
	l.user("Let's try it your way: replace Pillow with pyvips, and since vips is lighter, bring memory down to 512 MB.")
	p.decision("pyvips", "active", "library now doing the picture resizing", "replace Pillow with pyvips")
	p.replaces("pyvips", "pillow")
	p.decision("mem-512", "active", "current function memory size", "bring memory down to 512 MB")
	p.replaces("mem-512", "lambda-mem")
	l.edit("", "/home/dev/thumbs/handler.py", "img = Image.open(buf)\n    img.thumbnail((512, 512))", "img = pyvips.Image.thumbnail_buffer(buf, 512)")
	p.change("handler", "function code doing the resize", "handler.py")
	l.bash("", "sam build --use-container && sam deploy --no-confirm-changeset && ./scripts/bench.sh 200", "Build Succeeded\nSuccessfully created/updated stack - thumbs in us-east-1\np50 310ms p99 960ms  (200 images, 12 MP jpeg)", false)
	l.say("With pyvips at 512 MB: p50 310ms, p99 960ms on the same 200 images.")
	p.outcome("fast", "success", "latency figures after the library change", "p50 310ms, p99 960ms")
	p.closes("fast", "slow-p99")
	l.user("Originals in the source bucket are never modified or deleted by this function.")
	p.rule("originals", "active", "what the function may not do to uploaded source files", "never modified or deleted by this function")
	l.user("Should we also emit WebP? Think about which browsers we still support and get back to me.")
	p.thread("webp", "open", "undecided whether to output a newer compressed picture format", "Should we also emit WebP")
	return p
}

// projOperator: a Kubernetes operator. CRD version frozen; reconcile
// interval decided then corrected; a finalizer bug.
func projOperator() *proj {
	p := newProj(18, "pgoperator")
	l := p.session(day(10, 5, 10, 0))
	l.user("The v1beta1 PostgresCluster schema is what customers have applied; it's frozen. New fields go into v1beta2 only.")
	p.rule("crd-frozen", "active", "compatibility rule for the custom resource's published schema version", "schema is what customers have applied; it's frozen")
	l.read("/home/dev/pgoperator/internal/controller/cluster_controller.go", "func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {\n\t...\n\treturn ctrl.Result{}, nil\n}\n")
	l.say("The reconciler never requeues, so drift (someone deleting a Service by hand) is only fixed on the next watch event. I'll requeue every 30 seconds.")
	p.decision("requeue-30", "superseded", "assistant's first periodic re-check interval for drift", "I'll requeue every 30 seconds")
	l.edit("", "/home/dev/pgoperator/internal/controller/cluster_controller.go", "return ctrl.Result{}, nil", "return ctrl.Result{RequeueAfter: 30 * time.Second}, nil")
	l.user("30s is way too chatty with 400 clusters on one apiserver. Make it 5 minutes and rely on owned-object watches for the rest.")
	p.decision("requeue-5m", "active", "periodic re-check interval now used, with watches on child objects", "Make it 5 minutes")
	p.replaces("requeue-5m", "requeue-30")
	l.edit("", "/home/dev/pgoperator/internal/controller/cluster_controller.go", "RequeueAfter: 30 * time.Second", "RequeueAfter: 5 * time.Minute")
	p.change("controller", "the reconcile loop file", "internal/controller/cluster_controller.go")
	l.bash("", "make test", "--- FAIL: TestDeleteRemovesFinalizer (10.02s)\n    cluster_controller_test.go:201: timed out: PostgresCluster still has finalizer pg.acme.io/cleanup\nFAIL\nExit code 2", true)
	p.thread("finalizer", "closed", "deletion test hangs because a cleanup marker is never removed", "TestDeleteRemovesFinalizer")
	l.say("TestDeleteRemovesFinalizer times out: the finalizer is only removed after the backup job succeeds, and envtest never runs jobs.")

	l = p.session(day(10, 12, 11, 0))
	l.user("For the finalizer: don't wait for the backup job in tests, inject a BackupRunner interface and fake it.")
	p.decision("backup-iface", "active", "how the cleanup step's backup dependency is replaced in tests", "inject a BackupRunner interface and fake it")
	l.write("", "/home/dev/pgoperator/internal/controller/backup.go", "// BackupRunner takes the final backup before a cluster is deleted.\ntype BackupRunner interface {\n\tFinalBackup(ctx context.Context, c *v1beta1.PostgresCluster) error\n}\n")
	p.change("backup-go", "new interface for the last backup before deletion", "internal/controller/backup.go")
	l.bash("", "make test", "ok  \tgithub.com/acme/pgoperator/internal/controller\t38.114s", false)
	l.say("make test passes: TestDeleteRemovesFinalizer uses a fake BackupRunner.")
	p.outcome("finalizer-ok", "success", "deletion test passes with a stand-in for the backup step", "TestDeleteRemovesFinalizer uses a fake BackupRunner")
	p.closes("finalizer-ok", "finalizer")
	l.user("One question I don't have an answer to yet: should the operator support in-place major version upgrades or only dump/restore? Let's not decide today.")
	p.thread("major-upgrade", "open", "undecided approach for moving a database to a new major release", "in-place major version upgrades or only dump/restore")
	return p
}

// projSdk: a TypeScript analytics SDK. The bundler changes; a size
// budget rule; backwards compatibility; a question closed later.
func projSdk() *proj {
	p := newProj(19, "analytics-sdk")
	l := p.session(day(10, 7, 9, 0))
	l.user("The bundle is built with rollup and three plugins. I'd like to keep rollup but get rid of the babel plugin.")
	p.decision("rollup", "superseded", "bundler kept in the first session", "I'd like to keep rollup")
	l.bash("", "npx rollup -c && ls -l dist/", "created dist/index.mjs, dist/index.cjs in 2.1s\n-rw-r--r-- 1 dev dev 14388 index.mjs\n-rw-r--r-- 1 dev dev 15102 index.cjs", false)
	l.user("The minified+gzipped browser build has a hard ceiling of 5 KB. Anything above that doesn't ship.")
	p.rule("size", "active", "maximum compressed size of the browser build", "hard ceiling of 5 KB")
	l.bash("", "npx size-limit", "  Size limit: 5 KB\n  Size:       5.61 KB with all dependencies, minified and gzipped\n  Package size limit has exceeded by 624 B\nExit code 1", true)
	p.thread("oversize", "closed", "the compressed browser build is over its limit", "Package size limit has exceeded by 624 B")
	l.say("We're 624 B over. The biggest chunk is the uuid dependency (1.1 KB); crypto.randomUUID covers every browser we target except Safari 15.3. Can we drop Safari 15.3?")
	p.thread("safari", "closed", "assistant asked whether an older browser release can lose support", "Can we drop Safari 15.3?")
	l.user("Public API changes must remain backward-compatible within 3.x; deprecate, don't remove.")
	p.rule("semver", "active", "compatibility policy for the library's exported functions in the current major line", "deprecate, don't remove")

	l = p.session(day(10, 14, 10, 0))
	l.user("Safari 15.3 is under 0.2% of our traffic, drop it and use crypto.randomUUID. And honestly rollup has been a pain: move the build to tsup.")
	p.decision("drop-safari", "active", "decision to stop supporting an older browser and use the native id generator", "drop it and use crypto.randomUUID")
	p.closes("drop-safari", "safari")
	p.decision("tsup", "active", "bundler now used for the library", "move the build to tsup")
	p.replaces("tsup", "rollup")
	l.write("", "/home/dev/analytics-sdk/tsup.config.ts", "export default defineConfig({\n  entry: ['src/index.ts'],\n  format: ['esm', 'cjs'],\n  minify: true,\n  dts: true,\n})\n")
	p.change("tsup-config", "new bundler config file", "tsup.config.ts")
	l.bash("", "npm uninstall uuid rollup @rollup/plugin-babel && npx tsup && npx size-limit", "ESM dist/index.mjs 12.90 KB\nCJS dist/index.cjs 13.52 KB\n  Size limit: 5 KB\n  Size:       4.48 KB with all dependencies, minified and gzipped", false)
	l.say("Now 4.48 KB gzipped, under the 5 KB limit.")
	p.outcome("under-limit", "success", "compressed build size after removing the dependency", "4.48 KB gzipped")
	p.closes("under-limit", "oversize")
	return p
}

// projBilling: a Rails billing app. Sidekiq cron decided; a rule about
// the invoices table; a failing spec fixed later; a plan approved.
func projBilling() *proj {
	p := newProj(20, "billing")
	l := p.session(day(10, 9, 8, 0))
	l.user("Monthly invoices run from a crontab on the old VM. Move them to sidekiq-cron, schedule 02:00 UTC on the 1st.")
	p.decision("sidekiq-cron", "active", "scheduler that triggers the monthly run", "Move them to sidekiq-cron")
	p.decision("schedule-1", "superseded", "first time of the monthly run", "schedule 02:00 UTC on the 1st")
	l.write("", "/home/dev/billing/config/schedule.yml", "monthly_invoices:\n  cron: \"0 2 1 * *\"\n  class: MonthlyInvoicesJob\n")
	p.change("schedule", "the recurring job definition file", "config/schedule.yml")
	l.user("House rule: nobody edits rows in invoices with SQL by hand, corrections go through a credit note.")
	p.rule("credit-note", "active", "how mistakes on issued bills must be corrected", "corrections go through a credit note")
	l.bash("", "bundle exec rspec spec/jobs/monthly_invoices_job_spec.rb", "Failures:\n  1) MonthlyInvoicesJob skips cancelled subscriptions\n     Failure/Error: expect(Invoice.count).to eq(2)\n       expected: 2\n            got: 3\nFinished in 1.21 seconds\n4 examples, 1 failure\nExit code 1", true)
	p.thread("cancelled", "closed", "spec about not billing ended plans finds one bill too many", "skips cancelled subscriptions")
	l.say("The spec 'skips cancelled subscriptions' fails: subscriptions cancelled mid-month still get a full invoice.")

	l = p.session(day(10, 16, 9, 0))
	l.user("Finance wants invoices out before the EU morning. Move the run to 23:00 UTC on the last day of the month instead. And fix the cancelled-subscription spec — plan it first.")
	p.decision("schedule-2", "active", "current time of the monthly run", "23:00 UTC on the last day of the month")
	p.replaces("schedule-2", "schedule-1")
	l.plan(lines("## Cancelled subscriptions",
		"1. Prorate: a subscription cancelled mid-period is billed for the days it was active.",
		"2. Subscriptions cancelled before the period starts are skipped.",
		"3. Update the spec to expect a prorated invoice."))
	p.decision("prorate", "active", "approved treatment of plans ended partway through a period", "billed for the days it was active")
	l.edit("", "/home/dev/billing/app/jobs/monthly_invoices_job.rb", "subs = Subscription.active", "subs = Subscription.billable_in(period)")
	p.change("job-rb", "the monthly run's job class", "app/jobs/monthly_invoices_job.rb")
	l.bash("", "bundle exec rspec spec/jobs/monthly_invoices_job_spec.rb", "Finished in 1.09 seconds\n5 examples, 0 failures", false)
	l.say("The job spec passes (5 examples, 0 failures) with proration for mid-period cancellations.")
	p.outcome("spec-ok", "success", "the monthly run's spec passes after the billing change", "5 examples, 0 failures")
	p.closes("spec-ok", "cancelled")
	l.user("Do we need to send the prorated invoices to the tax provider differently? Ask finance, leave it open.")
	p.thread("tax", "open", "pending question whether partial-period bills need special handling for the levy provider", "send the prorated invoices to the tax provider differently")
	return p
}
