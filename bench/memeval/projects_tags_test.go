package memeval

// cardTags tags cards by how their fact was stated, so the projects eval
// reports recall per tag as well as per kind. Tags derived from the
// links (reversal, closed later, cross-session) are added by buildFacts.
var cardTags = map[string][]string{
	// assistant: stated or asked by the assistant, not the user.
	"assistant": {"ledger/runner-binary", "logslice/anyhow", "paygate/retry-wrap", "paygate/idem-store", "pipelines/upsert",
		"pgoperator/requeue-30", "infra/vpc-pin", "ledger/money-type", "infra/classiclink-q", "pipelines/country-q",
		"warehouse/lookback", "analytics-sdk/safari", "arena-server/arena-reset", "authsvc/jwks", "catalog-search/analyzer-repo"},
	// ask-tool: the user's answer came back through AskUserQuestion.
	"ask-tool": {"trainer/metric", "otel-config/exporter", "catalog-search/analyzer-in-repo"},
	// plan: part of a plan the user approved (ExitPlanMode).
	"plan": {"fieldapp/nav-plan", "handbook/docusaurus", "handbook/redirects", "billing/prorate"},
	// in-request: a setting stated inside a task request.
	"in-request": {"trainer/lr-1", "trainer/precision", "trainer/ckpt-dir", "trainer/lr-2", "trainer/accum", "thumbs/lambda-mem",
		"thumbs/arch", "thumbs/mem-512", "trainer/batch-1", "trainer/batch-2", "notify/conc-10", "billing/schedule-1", "catalog-search/refresh-30", "storefront/dedupe",
		"storefront/stale", "chat-backend/rl-rate", "authsvc/ttl", "fieldapp/quality", "pipelines/refunds-backfill", "paygate/rl"},
	// compaction: an item of a compaction summary's to-do list.
	"compaction": {"ledger/rename-files", "ledger/old-table", "ledger/runbook", "notify/snooze", "notify/grafana", "notify/txn-queue"},
	// negative: a rule phrased as a prohibition.
	"negative": {"ledger/prod-schema", "ledger/no-float", "trainer/no-hub-push", "storefront/next-image", "storefront/checkout-ssr",
		"pipelines/pii-logs", "pipelines/keep-airflow", "catalog-search/alias-swap", "handbook/slugs", "arena-server/no-alloc",
		"authsvc/refresh-logs", "thumbs/originals", "paygate/no-pan", "chat-backend/envelope", "chat-backend/max-len", "analytics-sdk/semver"},
	// frozen: a format or schema declared unchangeable.
	"frozen": {"logslice/json-frozen", "authsvc/oauth-frozen", "pgoperator/crd-frozen", "chat-backend/envelope"},
	// aside: a rule or decision dropped in passing ("also", "btw").
	"aside": {"fieldapp/android9", "chat-backend/envelope", "storefront/next-image", "paygate/no-pan", "paygate/rl"},
	// question: an open question in one of its many phrasings.
	"question": {"logslice/since-relative", "pgoperator/major-upgrade", "infra/state-split", "trainer/tokenizer",
		"handbook/search-choice", "thumbs/webp", "billing/tax", "arena-server/arena-reset", "authsvc/jwks", "ledger/money-type",
		"infra/classiclink-q", "pipelines/country-q", "warehouse/lookback", "analytics-sdk/safari", "catalog-search/analyzer-repo"},
	// failure: a failing test, build or run.
	"failure": {"ledger/balance-test", "logslice/syslog-year", "catalog-search/facets", "chat-backend/ws-isolation", "paygate/replay",
		"arena-server/uaf", "warehouse/unique-fail", "authsvc/roundtrip", "notify/smtp-4xx", "pgoperator/finalizer", "billing/cancelled",
		"fieldapp/sync-e2e", "storefront/variants-type", "trainer/oom", "pipelines/dup-key", "pipelines/shipping-key", "infra/classiclink",
		"otel-config/pipeline-ref", "analytics-sdk/oversize", "handbook/broken-links", "pipelines/dst", "thumbs/slow-p99", "warehouse/undocumented"},
	// survives: stays in force although a decision on a related subject
	// changed around it (same session or later).
	"survives": {"ledger/prod-schema", "ledger/runner-binary", "otel-config/keep-errors", "chat-backend/rl-rate", "trainer/precision",
		"arena-server/snapshot", "authsvc/ttl", "logslice/clap", "thumbs/arch", "notify/oban", "trainer/ckpt-dir", "trainer/metric"},
	// shared-sentence: one sentence states this and another fact whose
	// status differs now, so only an artifact per setting or clause can
	// answer both.
	"shared-sentence": {"trainer/lr-1", "trainer/batch-1", "trainer/precision", "chat-backend/rl-key-1", "chat-backend/rl-rate",
		"otel-config/sample-10", "otel-config/keep-errors", "thumbs/lambda-mem", "thumbs/arch", "billing/sidekiq-cron", "billing/schedule-1"},
	// scope: a subject another project also decides (a rate limit, the
	// migration tool), so an unscoped answer may come from the wrong one.
	"scope": {"paygate/rl", "chat-backend/rl-key-2", "chat-backend/rl-rate", "authsvc/dbmate", "ledger/migrate-tool-2"},
}
