package memeval

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// claudeLog writes a Claude Code JSONL transcript line by line, the way
// Claude Code 2.1 writes it: typed prompts as string content, assistant
// messages with text and tool_use blocks, tool results as user lines.
type claudeLog struct {
	session string
	t       time.Time
	n       int
	lines   []string
	parent  string
	tool    int
	// cwd is the working directory written on every line; empty means
	// /repo.
	cwd string
}

func newClaudeLog(session string, start time.Time) *claudeLog {
	return &claudeLog{session: session, t: start}
}

func (l *claudeLog) add(m map[string]any) {
	l.n++
	l.t = l.t.Add(7 * time.Second)
	uuid := fmt.Sprintf("%s-0000-4000-8000-%012d", l.session[:8], l.n)
	cwd := l.cwd
	if cwd == "" {
		cwd = "/repo"
	}
	m["uuid"], m["sessionId"], m["timestamp"], m["cwd"], m["version"] = uuid, l.session, l.t.Format(time.RFC3339Nano), cwd, "2.1.39"
	if l.parent != "" {
		m["parentUuid"] = l.parent
	}
	l.parent = uuid
	b, _ := json.Marshal(m)
	l.lines = append(l.lines, string(b))
}

// user is a prompt the person typed.
func (l *claudeLog) user(text string) {
	l.t = l.t.Add(2 * time.Minute)
	l.add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

func (l *claudeLog) reply(content ...map[string]any) {
	stop := "end_turn"
	for _, c := range content {
		if c["type"] == "tool_use" {
			stop = "tool_use"
		}
	}
	l.add(map[string]any{"type": "assistant", "requestId": fmt.Sprintf("req_%s_%d", l.session[:8], l.n), "message": map[string]any{
		"id": fmt.Sprintf("msg_%s_%d", l.session[:8], l.n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 1200, "output_tokens": 150}}})
}

// say is an assistant message of text only.
func (l *claudeLog) say(text string) { l.reply(map[string]any{"type": "text", "text": text}) }

// call is an assistant message (optional text, then one tool use)
// followed by the tool's result.
func (l *claudeLog) call(text, name string, input map[string]any, out string, isErr bool) {
	l.tool++
	id := fmt.Sprintf("toolu_%s_%d", l.session[:8], l.tool)
	var content []map[string]any
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	content = append(content, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
	l.reply(content...)
	l.add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": out, "is_error": isErr}}}})
}

func (l *claudeLog) bash(text, cmd, out string, fail bool) {
	l.call(text, "Bash", map[string]any{"command": cmd}, out, fail)
}

func (l *claudeLog) edit(text, path, old, new string) {
	l.call(text, "Edit", map[string]any{"file_path": path, "old_string": old, "new_string": new},
		"The file "+path+" has been updated.", false)
}

func (l *claudeLog) write(text, path, content string) {
	l.call(text, "Write", map[string]any{"file_path": path, "content": content},
		"File created successfully at: "+path, false)
}

func (l *claudeLog) read(path, content string) {
	l.call("", "Read", map[string]any{"file_path": path}, content, false)
}

func (l *claudeLog) String() string { return strings.Join(l.lines, "\n") + "\n" }

// The synthetic sessions. Each is a few tasks of one project, written to
// exercise what memory must answer: decisions made and replaced,
// constraints the user stated, TODOs and FIXMEs left in code, a failing
// test fixed later and one never fixed, a blocker, a question the agent
// asked that nobody answered.
const (
	sessPayments = "a1111111-1111-4111-8111-111111111111"
	sessDocs     = "b2222222-2222-4222-8222-222222222222"
	sessIngest   = "c4444444-4444-4444-8444-444444444444"
	sessDeploy   = "d5555555-5555-4555-8555-555555555555"
)

// synthetic returns the synthetic transcripts by session id.
func synthetic() map[string]string {
	return map[string]string{
		sessPayments: paymentsSession(),
		sessDocs:     docsSession(),
		sessIngest:   ingestSession(),
		sessDeploy:   deploySession(),
	}
}

// paymentsSession: webhook retries (Redis queue, later Postgres), a
// backoff test that fails and is fixed in the next task, an ordering test
// that is never fixed, and a question left unanswered at the end.
func paymentsSession() string {
	l := newClaudeLog(sessPayments, time.Date(2026, 9, 14, 8, 30, 0, 0, time.UTC))
	l.user("Add retry logic to the payment webhook handler in payments/webhook.go. Never retry a webhook that got a 4xx response. The handler must stay idempotent.")
	l.read("payments/webhook.go", "package payments\n\nfunc (h *Handler) Deliver(ev Event) error {\n\treturn h.post(ev)\n}\n")
	l.say("We will use exponential backoff with jitter for the webhook retries, capped at five attempts. We'll use Redis for the retry queue, since the workers already talk to it.")
	l.edit("", "payments/webhook.go", "\treturn h.post(ev)\n",
		"\t// TODO: make the maximum number of retries configurable per merchant\n\treturn h.retry(ev, backoff{base: 200 * time.Millisecond, max: 5})\n")
	l.write("", "payments/retry_queue.go", "package payments\n\n// redisQueue holds webhooks waiting for a retry.\ntype redisQueue struct{ addr string }\n")
	l.bash("", "go test ./payments/...", "--- FAIL: TestWebhookRetryBackoff (0.21s)\n    webhook_test.go:48: second attempt after 0s, want >= 200ms\nFAIL\nFAIL\texample.com/shop/payments\t0.240s\nExit code 1", true)
	l.say("Retries are in, but TestWebhookRetryBackoff fails: the handler calls time.Now directly, so the test cannot control the clock.")

	l.user("Fix the backoff test.")
	l.say("We decided to inject a Clock interface into the handler instead of calling time.Now, so tests can use a fake clock.")
	l.write("", "payments/clock.go", "package payments\n\n// Clock is the time source of the retry loop.\ntype Clock interface{ Now() time.Time }\n")
	l.edit("", "payments/webhook.go", "type Handler struct {\n", "type Handler struct {\n\tclock Clock\n")
	l.bash("", "go test ./payments/...", "ok  \texample.com/shop/payments\t0.052s", false)
	l.say("TestWebhookRetryBackoff passes now with the fake clock.")

	l.user("Switch the retry queue from Redis to Postgres, we don't want to operate another dependency.")
	l.say("We decided to use a Postgres table for the retry queue instead of Redis; rows are claimed with SELECT ... FOR UPDATE SKIP LOCKED.")
	l.write("", "migrations/0007_retry_queue.sql", "CREATE TABLE retry_queue (\n  id bigserial PRIMARY KEY,\n  payload jsonb NOT NULL,\n  next_attempt timestamptz NOT NULL\n);\n")
	l.write("", "payments/retry_queue.go", "package payments\n\n// pgQueue holds webhooks waiting for a retry in the retry_queue table.\ntype pgQueue struct{ db *sql.DB }\n")
	l.bash("", "go test ./payments/...", "--- FAIL: TestRetryQueueOrdering (0.09s)\n    retry_queue_test.go:31: got ids [3 1 2], want [1 2 3]\nFAIL\nFAIL\texample.com/shop/payments\t0.130s\nExit code 1", true)
	l.say("The queue now lives in Postgres, but TestRetryQueueOrdering still fails: rows come back in heap order because the claim query has no ORDER BY. Should I order the claim query by next_attempt, or by id?")
	return l.String()
}

// docsSession: a broken docs build fixed with a path alias, pnpm
// replacing npm, dark mode with CSS variables later replaced by the
// Tailwind dark variant, a FIXME about contrast that stays.
func docsSession() string {
	l := newClaudeLog(sessDocs, time.Date(2026, 9, 20, 14, 0, 0, 0, time.UTC))
	l.user("The docs site build is broken: npm run build fails with \"Cannot find module '@docs/theme'\". Fix it.")
	l.bash("", "npm run build", "> docs@1.4.0 build\n> astro build\n\nerror   Cannot find module '@docs/theme' imported from src/layouts/Base.astro\nExit code 1", true)
	l.read("docs/tsconfig.json", "{\n  \"compilerOptions\": {\n    \"baseUrl\": \".\"\n  }\n}\n")
	l.edit("The alias @docs/theme is not declared in tsconfig.json; adding it.", "docs/tsconfig.json", "\"baseUrl\": \".\"\n",
		"\"baseUrl\": \".\",\n    \"paths\": { \"@docs/theme\": [\"src/theme/index.ts\"] }\n")
	l.bash("", "npm run build", "> docs@1.4.0 build\n> astro build\n\n12 page(s) built in 3.41s\nComplete!", false)
	l.say("The build passes: the @docs/theme alias was missing from docs/tsconfig.json.")

	l.user("Use pnpm instead of npm for this repo from now on. Do not commit package-lock.json.")
	l.say("We decided to use pnpm instead of npm for the docs repo.")
	l.bash("", "rm package-lock.json && pnpm import && pnpm install", "Progress: resolved 412, reused 398, downloaded 14, added 412, done", false)
	l.edit("", ".gitignore", "node_modules/\n", "node_modules/\npackage-lock.json\n")
	l.say("Switched to pnpm: pnpm-lock.yaml replaces package-lock.json, which is now ignored.")

	l.user("Add a dark mode to the docs theme.")
	l.say("For the theme colors, we'll use CSS custom properties instead of a Tailwind plugin, toggled by a data-theme attribute on <html>.")
	l.write("", "docs/src/theme/colors.css", ":root { --bg: #fff; --fg: #111; }\n[data-theme=dark] { --bg: #0d1117; --fg: #e6edf3; }\n/* FIXME: contrast of inline code in dark mode is too low */\n")
	l.edit("", "docs/src/layouts/Base.astro", "<html lang=\"en\">", "<html lang=\"en\" data-theme={theme}>")
	l.bash("", "pnpm build", "12 page(s) built in 3.12s\nComplete!", false)
	l.say("Dark mode works. The inline code contrast in dark mode is still too low; I left a FIXME in colors.css.")

	l.user("Actually, CSS variables are too much plumbing. Let's go with the Tailwind dark: variant instead.")
	l.say("We decided to use the Tailwind dark: variant instead of CSS custom properties for dark mode.")
	l.edit("", "docs/tailwind.config.js", "module.exports = {\n", "module.exports = {\n  darkMode: 'class',\n")
	l.edit("", "docs/src/layouts/Base.astro", "<html lang=\"en\" data-theme={theme}>", "<html lang=\"en\" class={theme === 'dark' ? 'dark' : ''}>")
	l.bash("", "pnpm build", "12 page(s) built in 3.20s\nComplete!", false)
	l.say("Dark mode now uses Tailwind's class strategy (darkMode: 'class').")
	return l.String()
}

// ingestSession: a CSV parser with a date test fixed in the same task, a
// UnicodeDecodeError fixed by a decision about the encoding, a TODO about
// invoice ids, and an open question about duplicates.
func ingestSession() string {
	l := newClaudeLog(sessIngest, time.Date(2026, 10, 3, 9, 15, 0, 0, time.UTC))
	l.user("Write a parser for the vendor CSV exports in ingest/vendor_csv.py. Dates must be parsed as UTC. Do not use pandas; keep the dependencies small.")
	l.write("", "ingest/vendor_csv.py", "import csv\nfrom datetime import datetime\n\ndef parse(path):\n    with open(path, newline='') as f:\n        for row in csv.DictReader(f):\n            row['date'] = datetime.strptime(row['date'], '%Y-%m-%d %H:%M')\n            yield row\n")
	l.bash("", "pytest tests/test_vendor_csv.py", "FAILED tests/test_vendor_csv.py::test_parse_dates_utc - AssertionError: datetime.datetime(2026, 3, 1, 10, 0) is naive\n1 failed, 4 passed in 0.31s\nExit code 1", true)
	l.edit("test_parse_dates_utc fails because the parsed dates are naive.", "ingest/vendor_csv.py",
		"row['date'] = datetime.strptime(row['date'], '%Y-%m-%d %H:%M')",
		"row['date'] = datetime.strptime(row['date'], '%Y-%m-%d %H:%M').replace(tzinfo=timezone.utc)")
	l.bash("", "pytest tests/test_vendor_csv.py", "5 passed in 0.28s", false)
	l.say("The parser is in ingest/vendor_csv.py using only the csv module; dates are timezone-aware UTC.")

	l.user("The nightly ingest job crashes on the ACME export with a UnicodeDecodeError.")
	l.bash("", "python -m ingest.run --vendor acme", "Traceback (most recent call last):\n  File \"ingest/vendor_csv.py\", line 6, in parse\nUnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 1187: invalid continuation byte\nExit code 1", true)
	l.say("ACME's export is Windows-1252, not UTF-8 (0xe9 is é). We decided to decode ACME exports as cp1252 instead of utf-8, configured per vendor in ingest/vendors.toml.")
	l.write("", "ingest/vendors.toml", "[acme]\nencoding = \"cp1252\"\n\n[globex]\nencoding = \"utf-8\"\n")
	l.edit("", "ingest/vendor_csv.py", "def parse(path):\n    with open(path, newline='') as f:", "def parse(path, encoding='utf-8'):\n    with open(path, newline='', encoding=encoding) as f:")
	l.bash("", "python -m ingest.run --vendor acme", "ingested 18204 rows from acme (0 rejected)", false)
	l.say("The ACME import runs: 18204 rows, none rejected.")

	l.user("Now drop duplicate invoices before loading.")
	l.write("", "ingest/dedupe.py", "def dedupe(rows):\n    # TODO: handle vendors that reuse invoice numbers across fiscal years\n    seen = set()\n    for r in rows:\n        key = (r['vendor'], r['invoice_id'])\n        if key not in seen:\n            seen.add(key)\n            yield r\n")
	l.bash("", "pytest tests/test_dedupe.py", "3 passed in 0.05s", false)
	l.say("Duplicates are dropped by (vendor, invoice_id) in ingest/dedupe.py. Do you want the dropped duplicates logged to the rejects table, or dropped silently?")
	return l.String()
}

// deploySession: a staging deploy blocked by a failing readiness probe,
// unblocked by running the migration first, a decision to run migrations
// as a Helm hook, and a certificate rotation with a TODO about renewal.
func deploySession() string {
	l := newClaudeLog(sessDeploy, time.Date(2026, 10, 21, 16, 40, 0, 0, time.UTC))
	l.user("Deploy the API to staging with the new Helm chart. The staging database must stay at 2 replicas.")
	l.bash("", "helm upgrade --install api ./charts/api -f charts/api/values-staging.yaml --wait --timeout 5m",
		"Error: UPGRADE FAILED: timed out waiting for the condition\nExit code 1", true)
	l.bash("", "kubectl -n staging describe pod -l app=api | tail -5",
		"  Warning  Unhealthy  2m (x30 over 5m)  kubelet  Readiness probe failed: HTTP probe failed with statuscode: 503", false)
	l.say("The deploy is blocked by the readiness probe: /healthz returns 503 because the schema migration has not run on staging, so the new pods never become ready.")

	l.user("Run the migration job first, then redeploy.")
	l.bash("", "kubectl -n staging apply -f charts/api/jobs/migrate.yaml && kubectl -n staging wait --for=condition=complete job/api-migrate --timeout=3m",
		"job.batch/api-migrate created\njob.batch/api-migrate condition met", false)
	l.bash("", "helm upgrade --install api ./charts/api -f charts/api/values-staging.yaml --wait --timeout 5m",
		"Release \"api\" has been upgraded. Happy Helming!\nSTATUS: deployed\nREVISION: 14", false)
	l.say("We decided to run migrations as a Helm pre-upgrade hook from now on, so a deploy can never start before its schema exists.")
	l.write("", "charts/api/templates/migrate-job.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: api-migrate\n  annotations:\n    \"helm.sh/hook\": pre-upgrade\n")
	l.say("Staging runs revision 14; the migration job is now a pre-upgrade hook in charts/api/templates/migrate-job.yaml.")

	l.user("Rotate the staging TLS certificate. Never commit the private key to the repo.")
	l.bash("", "kubectl -n staging create secret tls api-tls --cert=api.crt --key=api.key --dry-run=client -o yaml | kubectl apply -f -",
		"secret/api-tls configured", false)
	l.edit("", "charts/api/values-staging.yaml", "tls:\n  secretName: api-tls-2025\n",
		"tls:\n  # TODO: automate certificate renewal with cert-manager\n  secretName: api-tls\n")
	l.say("The staging certificate is rotated: the ingress uses the api-tls secret, and the key stays out of the repo.")
	return l.String()
}
