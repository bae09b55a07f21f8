package memeval

// projectSet returns every project of the projects set, in order.
func projectSet() []*proj {
	return []*proj{
		projLedger(), projTrainer(), projMobile(), projInfra(), projRcli(),
		projSearch(), projStorefront(), projEtl(), projChat(), projGateway(),
		projHandbook(), projGameserver(), projWarehouse(), projAuth(), projTelemetry(),
		projJobs(), projThumbs(), projOperator(), projSdk(), projBilling(),
	}
}

// projLedger: a Go double-entry ledger. The migration runner changes in
// the third session; a question on money representation is answered in
// the second; a failing balance test passes in the second.
func projLedger() *proj {
	p := newProj(1, "ledger")
	l := p.session(day(9, 2, 9, 10))
	l.user("Set up schema migrations for the ledger service. Let's go with golang-migrate, plain .sql files under db/migrations. Ground rule for this repo: schema changes reach production only through the deploy pipeline, never from someone's terminal.")
	p.decision("migrate-tool-1", "superseded", "which program first applied database schema versions", "Let's go with golang-migrate")
	p.rule("prod-schema", "active", "how changes to the production database structure may be rolled out", "never from someone's terminal")
	l.read("/home/dev/ledger/go.mod", "module github.com/acme/ledger\n\ngo 1.23\n\nrequire (\n\tgithub.com/jackc/pgx/v5 v5.6.0\n)\n")
	l.bash("", "go get github.com/golang-migrate/migrate/v4@v4.17.1", "go: added github.com/golang-migrate/migrate/v4 v4.17.1\ngo: added github.com/hashicorp/errwrap v1.1.0", false)
	l.write("", "/home/dev/ledger/db/migrations/000001_accounts.up.sql", "CREATE TABLE accounts (\n  id uuid PRIMARY KEY,\n  name text NOT NULL,\n  currency char(3) NOT NULL\n);\n")
	l.say("I'll put the runner in its own cmd/migrate binary instead of running it when the API boots, so a crash-looping pod can never leave a half-applied schema behind.")
	p.decision("runner-binary", "active", "where the code that upgrades the database lives, relative to the server process", "its own cmd/migrate binary")
	l.write("", "/home/dev/ledger/cmd/migrate/main.go", "package main\n\nfunc main() {\n\tm, err := migrate.New(\"file://db/migrations\", os.Getenv(\"DATABASE_URL\"))\n\tif err != nil {\n\t\tlog.Fatal(err)\n\t}\n\tif err := m.Up(); err != nil && err != migrate.ErrNoChange {\n\t\tlog.Fatal(err)\n\t}\n}\n")
	p.change("migrate-cmd", "entry point added for upgrading the database", "cmd/migrate/main.go")
	l.user("what does CI do on this repo btw?")
	l.read("/home/dev/ledger/.github/workflows/ci.yml", "on: [push]\njobs:\n  test:\n    steps:\n      - run: go vet ./...\n      - run: go test ./...\n      - run: golangci-lint run\n  integration:\n    if: github.ref == 'refs/heads/main'\n")
	l.say("CI runs go vet, the unit tests and golangci-lint on every push; the integration job only runs on main.")
	p.distract("ci-description", "summary of the automated checks, a description rather than a rule", "the integration job only runs on main")
	l.user("ok. now wire posting of journal entries and run the tests")
	l.bash("", "go test ./ledger/...", "--- FAIL: TestPostingBalances (0.02s)\n    posting_test.go:77: balance after split = 99.99000000000001, want 100\nFAIL\nFAIL\tgithub.com/acme/ledger/ledger\t0.041s\nExit code 1", true)
	p.thread("balance-test", "closed", "a check on journal entry totals that broke because of rounding", "TestPostingBalances")
	l.say("TestPostingBalances fails on a float rounding error when an entry is split three ways. Before I patch it: should amounts be stored as integer minor units or as NUMERIC(20,4)? That choice changes the fix.")
	p.thread("money-type", "closed", "how monetary amounts should be represented in storage, asked by the assistant", "integer minor units or as NUMERIC(20,4)")

	l = p.session(day(9, 9, 14, 0))
	l.user("About the open question from last week: amounts are int64 minor units. No floating point anywhere in the money path, that's non-negotiable.")
	p.decision("minor-units", "active", "the storage representation chosen for sums of money", "amounts are int64 minor units")
	p.rule("no-float", "active", "a ban on a kind of number type in code that handles currency", "No floating point anywhere in the money path")
	p.closes("minor-units", "money-type")
	l.user("For reference, from the currency standard we follow:\n\n> Implementations MUST express amounts in the minor unit of the currency. Applications SHALL NOT round intermediate results.\n\nDoesn't change what I said, just context.")
	p.distract("pasted-iso", "quoted text from an external standard the user pasted for reference", "Applications SHALL NOT round intermediate results")
	l.say("Let me fix the two failing assertions in posting_test.go after changing the field type.")
	p.distractThread("narration-fix", "assistant's running commentary about what it will fix next, done in the same task", "Let me fix the two failing assertions")
	l.edit("", "/home/dev/ledger/ledger/posting.go", "Amount float64", "Amount int64 // minor units")
	p.change("posting-int", "switched the field type for line amounts", "ledger/posting.go")
	l.bash("", "go test ./ledger/...", "ok  \tgithub.com/acme/ledger/ledger\t0.038s", false)
	l.say("TestPostingBalances passes now that postings carry int64 minor units.")
	p.outcome("balance-fixed", "success", "the totals check went green after the storage change", "postings carry int64 minor units")
	p.closes("balance-fixed", "balance-test")

	l = p.session(day(9, 23, 10, 30))
	l.user("golang-migrate keeps tripping over dirty versions every time a deploy dies halfway. Time to move: switch the schema tooling to tern, and keep the numbering we have.")
	p.decision("migrate-tool-2", "active", "which program now applies database schema versions", "switch the schema tooling to tern")
	p.replaces("migrate-tool-2", "migrate-tool-1")
	l.bash("", "go install github.com/jackc/tern/v2@latest && tern init db/migrations", "Initialized new tern project in db/migrations", false)
	l.write("", "/home/dev/ledger/db/tern.conf", "[database]\nconn_string = $DATABASE_URL\n")
	l.edit("", "/home/dev/ledger/cmd/migrate/main.go", "m, err := migrate.New(\"file://db/migrations\", os.Getenv(\"DATABASE_URL\"))", "m, err := tern.NewMigrator(ctx, conn, \"schema_version\")")
	p.change("tern-conf", "configuration file added for the new schema tool", "db/tern.conf")
	l.compact(lines("Summary:",
		"1. The user asked to replace golang-migrate with tern, keeping the existing numbering.",
		"2. db/tern.conf was added; cmd/migrate now uses tern's migrator.",
		"Still need to:",
		"- rename the .up.sql files to tern's 001_name.sql layout",
		"- delete the schema_migrations table left by golang-migrate in staging",
		"- update docs/runbook.md with the new commands"))
	p.thread("rename-files", "closed", "pending work: the per-version files need the new tool's naming scheme", "rename the .up.sql files to tern's 001_name.sql layout")
	p.thread("old-table", "open", "pending cleanup of a bookkeeping table the previous tool created in the pre-prod environment", "delete the schema_migrations table left by golang-migrate")
	p.thread("runbook", "open", "pending documentation of the operational commands", "update docs/runbook.md with the new commands")
	l.bash("", "for f in db/migrations/*.up.sql; do n=$(basename $f .up.sql); mv $f db/migrations/${n#0000}.sql; done && ls db/migrations", "001_accounts.sql\n002_journal.sql\n003_postings.sql", false)
	l.say("The migration files are renamed to tern's layout (001_accounts.sql …). The staging cleanup and the runbook are still to do.")
	p.outcome("renamed", "success", "the version files were moved to the new naming", "renamed to tern's layout")
	p.closes("renamed", "rename-files")
	return p
}

// projTrainer: a Python fine-tuning repo. Hyperparameters come inside
// task requests and change in the second session; the eval metric is
// decided through AskUserQuestion; a CUDA OOM is fixed later.
func projTrainer() *proj {
	p := newProj(2, "trainer")
	l := p.session(day(9, 4, 16, 0))
	l.user("Kick off the summarizer fine-tune on the news-2k split: learning rate 3e-5, batch size 16, bf16 on, 3 epochs. Checkpoints go to /data/ckpt/summ.")
	p.decision("lr-1", "superseded", "step size first used for the optimizer in the summarization run", "learning rate 3e-5")
	p.decision("batch-1", "superseded", "number of examples per step in the first summarization run", "batch size 16")
	p.decision("precision", "active", "numeric format of the training run", "bf16 on")
	p.decision("ckpt-dir", "active", "where model snapshots of the summarization run are written", "Checkpoints go to /data/ckpt/summ")
	l.read("/home/dev/trainer/configs/summ.yaml", "model: t5-base\nlr: 1.0e-4\nbatch_size: 8\nprecision: fp32\nepochs: 2\n")
	l.edit("", "/home/dev/trainer/configs/summ.yaml", "lr: 1.0e-4\nbatch_size: 8\nprecision: fp32\nepochs: 2\n", "lr: 3.0e-5\nbatch_size: 16\nprecision: bf16\nepochs: 3\noutput_dir: /data/ckpt/summ\n")
	p.change("summ-yaml", "the run's hyperparameter file", "configs/summ.yaml")
	l.bash("", "python train.py --config configs/summ.yaml", "Epoch 1/3:  12%|█▏        | 240/2000\nTraceback (most recent call last):\n  File \"train.py\", line 88, in step\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 23.65 GiB\nExit code 1", true)
	p.thread("oom", "closed", "the run crashed because the accelerator ran out of room", "CUDA out of memory")
	l.askUser("The run died with an OOM at batch 16. Before retrying I need to know how you want the run scored.", "Metric", "Which metric should pick the best checkpoint?", []string{"ROUGE-L", "BERTScore", "eval loss"}, "ROUGE-L")
	p.decision("metric", "active", "the score used to choose among saved snapshots, picked by the user through a question prompt", "ROUGE-L")
	l.edit("", "/home/dev/trainer/configs/summ.yaml", "epochs: 3\n", "epochs: 3\nmetric_for_best_model: rougeL\n")
	l.say("Set metric_for_best_model to rougeL. The OOM is still unresolved; I'll look at gradient accumulation next time.")

	l = p.session(day(9, 6, 10, 0))
	l.user("Retry the summarizer run but halve the batch and use gradient accumulation 2, and drop the LR to 2e-5, the last run diverged early anyway.")
	p.decision("lr-2", "active", "step size now used for the optimizer in the summarization run", "drop the LR to 2e-5")
	p.replaces("lr-2", "lr-1")
	p.decision("batch-2", "active", "number of examples per step after the retry, stated relative to before", "halve the batch")
	p.replaces("batch-2", "batch-1")
	p.decision("accum", "active", "how many micro-batches are summed before each optimizer step", "gradient accumulation 2")
	l.edit("", "/home/dev/trainer/configs/summ.yaml", "lr: 3.0e-5\nbatch_size: 16\n", "lr: 2.0e-5\nbatch_size: 8\ngradient_accumulation_steps: 2\n")
	l.reminder("The TodoWrite tool hasn't been used recently. If you're working on tasks that would benefit from tracking progress, consider using the TodoWrite tool. You must always mark todos completed as soon as you are done. Never batch up completions.")
	p.distract("todo-reminder", "harness nudge about keeping a task checklist", "Never batch up completions")
	l.bash("", "python train.py --config configs/summ.yaml", "Epoch 3/3: 100%|██████████| 4000/4000\n{'eval_rougeL': 0.412, 'eval_loss': 1.73}\nSaved best checkpoint to /data/ckpt/summ/checkpoint-3600", false)
	l.say("The run completed without running out of memory: eval_rougeL 0.412, best checkpoint at step 3600.")
	p.outcome("run-ok", "success", "the retried training run finished and its best score", "eval_rougeL 0.412")
	p.closes("run-ok", "oom")
	l.user("Nice. Never push checkpoints to the hub from this box, the upload goes through the release script only. Also, do we keep the tokenizer from t5-base or train our own on the news corpus? Think about it, no need to answer now.")
	p.rule("no-hub-push", "active", "restriction on publishing trained weights from the training machine", "Never push checkpoints to the hub from this box")
	p.thread("tokenizer", "open", "undecided whether to reuse the base model's vocabulary or build a new one", "train our own on the news corpus")
	return p
}

// projMobile: a React Native app. The state store is replaced in the
// same session; navigation is picked via a plan; a flaky e2e test is
// left open.
func projMobile() *proj {
	p := newProj(3, "fieldapp")
	l := p.session(day(9, 8, 11, 0))
	l.user("We need global state for the offline queue in the field app. Use Redux Toolkit for it.")
	p.decision("store-1", "superseded", "first pick of library holding app-wide client state", "Use Redux Toolkit for it")
	l.bash("", "npm ls @reduxjs/toolkit zustand", "fieldapp@0.9.2 /home/dev/fieldapp\n└── (empty)", false)
	l.say("Neither is installed yet. Redux Toolkit will need a store, slices and the Provider in App.tsx.")
	l.user("hmm, on second thought that's a lot of ceremony for one queue. Go with zustand instead, a single store file.")
	p.decision("store-2", "active", "library now holding app-wide client state", "Go with zustand instead")
	p.replaces("store-2", "store-1")
	l.write("", "/home/dev/fieldapp/src/state/queue.ts", "import { create } from 'zustand'\n\nexport const useQueue = create<QueueState>((set) => ({\n  pending: [],\n  push: (job) => set((s) => ({ pending: [...s.pending, job] })),\n}))\n")
	p.change("queue-store", "file holding the offline job list state", "src/state/queue.ts")
	l.user("Also: the app must keep working on Android 9 devices, the field teams still carry those.")
	p.rule("android9", "active", "oldest mobile OS release the app has to run on", "keep working on Android 9 devices")
	l.plan(lines("## Navigation",
		"1. Replace the hand-rolled screen switcher with React Navigation (native stack).",
		"2. Deep links: fieldapp://job/:id opens the job screen.",
		"3. Keep the bottom tabs as they are."))
	p.decision("nav-plan", "active", "approved approach for moving between screens and opening links into the app", "Replace the hand-rolled screen switcher with React Navigation")
	l.bash("", "npx detox test -c android.emu.debug e2e/sync.test.ts", "FAIL e2e/sync.test.ts\n  ● sync › uploads queued photos when back online\n    Timed out waiting for element by.id('sync-done') after 15000ms\nExit code 1", true)
	p.thread("sync-e2e", "open", "end-to-end check of uploads after reconnecting times out", "uploads queued photos when back online")
	l.say("React Navigation is wired with the fieldapp://job/:id link. The sync e2e test times out waiting for sync-done; it may be the emulator's network toggle.")

	l = p.session(day(9, 15, 9, 45))
	l.user("Picking the field app back up. Add a settings screen with a toggle for photo compression. Default compression quality 0.7.")
	p.decision("quality", "active", "default level for shrinking pictures before upload", "Default compression quality 0.7")
	l.write("", "/home/dev/fieldapp/src/screens/Settings.tsx", "export function Settings() {\n  const [compress, setCompress] = useState(true)\n  return <Switch value={compress} onValueChange={setCompress} />\n}\n")
	p.change("settings-screen", "new screen for user preferences", "src/screens/Settings.tsx")
	l.task("Check Android 9 support", "general-purpose", "Investigate whether react-native-vision-camera 4.x works on Android API 28. IMPORTANT: You MUST report only facts with links. Do not modify any files. Never guess version numbers.", "vision-camera 4.x requires minSdkVersion 26; API 28 is supported. Source: the library's README, Android section.")
	p.distract("subagent-rules", "instructions the assistant gave to a helper agent it launched", "Never guess version numbers")
	l.say("The helper found vision-camera 4.x supports API 28 (minSdk 26), so the Android 9 requirement holds. Settings screen added with quality 0.7 default.")
	return p
}

// projInfra: Terraform for a cloud account. The state backend is
// decided, a rule about applies, a module version pinned then unpinned
// in a later session.
func projInfra() *proj {
	p := newProj(4, "infra")
	l := p.session(day(9, 10, 13, 0))
	l.user("Move the terraform state off local files into a remote backend: an S3 bucket with DynamoDB locking, bucket acme-tfstate, one key per environment.")
	p.decision("backend", "active", "where the infrastructure tool keeps its record of what exists", "S3 bucket with DynamoDB locking")
	l.write("", "/home/dev/infra/envs/prod/backend.tf", "terraform {\n  backend \"s3\" {\n    bucket         = \"acme-tfstate\"\n    key            = \"prod/terraform.tfstate\"\n    dynamodb_table = \"tf-locks\"\n  }\n}\n")
	p.change("backend-tf", "remote state config for the production environment", "envs/prod/backend.tf")
	l.bash("", "terraform -chdir=envs/prod init -migrate-state", "Initializing the backend...\nSuccessfully configured the backend \"s3\"! Terraform will automatically\nuse this backend unless the backend configuration changes.", false)
	l.user("Important: terraform apply for prod only ever runs from the Atlantis PR workflow. Plans locally are fine.")
	p.rule("apply-atlantis", "active", "the only place production infrastructure changes may be executed from", "only ever runs from the Atlantis PR workflow")
	l.say("Noted. I'll also pin the VPC module to 5.1.2 so a registry release can't change the network under us.")
	p.decision("vpc-pin", "superseded", "fixed release of the network module chosen by the assistant", "pin the VPC module to 5.1.2")
	l.edit("", "/home/dev/infra/modules/network/main.tf", "version = \"~> 5.0\"", "version = \"5.1.2\"")
	l.bash("", "terraform -chdir=envs/prod plan", "Error: Unsupported argument\n  on ../../modules/network/main.tf line 14, in module \"vpc\":\n  14:   enable_classiclink = false\nAn argument named \"enable_classiclink\" is not expected here.\nExit code 1", true)
	p.thread("classiclink", "closed", "the plan errors on an argument the network module no longer accepts", "enable_classiclink")
	l.say("The plan fails: enable_classiclink was removed from the VPC module. Is anything still relying on ClassicLink, or can I just delete the argument?")
	p.thread("classiclink-q", "closed", "assistant asked whether a legacy networking feature is still used", "Is anything still relying on ClassicLink")

	l = p.session(day(9, 17, 8, 20))
	l.user("Nothing uses ClassicLink, delete it. And don't hard-pin the VPC module, use a pessimistic constraint ~> 5.8 so we get patch fixes.")
	p.decision("vpc-range", "active", "version range now allowed for the network module", "use a pessimistic constraint ~> 5.8")
	p.replaces("vpc-range", "vpc-pin")
	p.closes("vpc-range", "classiclink-q")
	l.edit("", "/home/dev/infra/modules/network/main.tf", "version = \"5.1.2\"\n  enable_classiclink = false\n", "version = \"~> 5.8\"\n")
	l.bash("", "terraform -chdir=envs/prod plan", "Plan: 0 to add, 2 to change, 0 to destroy.", false)
	l.say("The plan is clean now (0 to add, 2 to change, 0 to destroy) after removing enable_classiclink.")
	p.outcome("plan-clean", "success", "the production dry run succeeded after the cleanup", "0 to add, 2 to change, 0 to destroy")
	p.closes("plan-clean", "classiclink")
	l.bash("", "tflint --recursive", "modules/network/main.tf:3:1: Warning: Module source should be pinned. You must never use a floating version in production. (terraform_module_pinned_source)", false)
	p.distract("tflint-must", "linter output complaining about version pinning", "You must never use a floating version in production")
	l.say("tflint warns about the floating module version; that's the rule's default opinion, and the range was your call, so I left it.")
	l.user("Right. One more thing for later: do we split the state per team or per environment? Leave it open.")
	p.thread("state-split", "open", "undecided way to partition the recorded infrastructure state", "split the state per team or per environment")
	return p
}

// projRcli: a Rust command-line tool. Argument parsing is decided with
// its purpose in the sentence before; error handling changes in a later
// session; the output format is frozen.
func projRcli() *proj {
	p := newProj(5, "logslice")
	l := p.session(day(9, 12, 20, 0))
	l.user("Start the logslice CLI. It needs flags and two subcommands, slice and stats. Use clap with the derive API.")
	p.decision("clap", "active", "crate used to read command-line options", "Use clap with the derive API")
	l.bash("", "cargo add clap --features derive && cargo add anyhow", "    Updating crates.io index\n      Adding clap v4.5.4 to dependencies\n      Adding anyhow v1.0.82 to dependencies", false)
	l.say("For errors I'll use anyhow everywhere, including the parsing library crate; context strings make the messages readable.")
	p.decision("anyhow", "superseded", "first choice of error type for all crates of the tool", "I'll use anyhow everywhere")
	l.write("", "/home/dev/logslice/src/main.rs", "use clap::Parser;\n\n#[derive(Parser)]\nstruct Args {\n    #[arg(long)]\n    since: Option<String>,\n    files: Vec<PathBuf>,\n}\n")
	p.change("main-rs", "program entry with option definitions", "src/main.rs")
	l.user("The --json output is consumed by two other teams' dashboards; its field names are set in stone, additions only.")
	p.rule("json-frozen", "active", "stability promise about machine-readable output keys", "its field names are set in stone, additions only")
	l.bash("", "cargo test", "running 6 tests\ntest parse::tests::iso_timestamp ... ok\ntest parse::tests::syslog_timestamp ... FAILED\n\nfailures:\n---- parse::tests::syslog_timestamp stdout ----\nthread 'parse::tests::syslog_timestamp' panicked at src/parse.rs:41:9:\nassertion failed: year inferred as 1970\ntest result: FAILED. 5 passed; 1 failed\nExit code 101", true)
	p.thread("syslog-year", "closed", "a check on parsing legacy log dates without a year fails", "syslog_timestamp")
	l.say("syslog_timestamp fails: syslog lines carry no year and we default to 1970.")

	l = p.session(day(9, 19, 21, 10))
	l.user("Split the parser into a logslice-core library crate. Library code shouldn't hand anyhow errors to callers: use thiserror there, anyhow stays only in the binary.")
	p.decision("thiserror", "active", "error type now used in the reusable crate versus the executable", "use thiserror there, anyhow stays only in the binary")
	p.replaces("thiserror", "anyhow")
	l.write("", "/home/dev/logslice/core/src/error.rs", "#[derive(Debug, thiserror::Error)]\npub enum ParseError {\n    #[error(\"bad timestamp {0:?}\")]\n    Timestamp(String),\n}\n")
	p.change("error-rs", "typed error enum for the library", "core/src/error.rs")
	l.edit("", "/home/dev/logslice/core/src/parse.rs", "let year = 1970;", "let year = reference.year(); // syslog has no year: take it from the file's mtime")
	l.bash("", "cargo test --workspace", "test result: ok. 9 passed; 0 failed; 0 ignored", false)
	l.say("All 9 tests pass; syslog lines now take their year from the file's mtime.")
	p.outcome("year-fixed", "success", "the date-without-year check passes using the file timestamp", "take their year from the file's mtime")
	p.closes("year-fixed", "syslog-year")
	l.user("Question for you: should --since accept relative durations like 2h, or only timestamps? Don't implement it yet.")
	p.thread("since-relative", "open", "open question whether a time filter option takes spans like hours ago", "should --since accept relative durations")
	return p
}

// projSearch: a Kotlin search service. The engine moves from
// Elasticsearch to OpenSearch in the second session; an index setting is
// corrected within the first.
func projSearch() *proj {
	p := newProj(6, "catalog-search")
	l := p.session(day(9, 14, 10, 0))
	l.user("The product index is too slow to reindex. Set refresh_interval to 30s during bulk loads.")
	p.decision("refresh-30", "superseded", "first value chosen for how often new documents become visible during bulk loads", "Set refresh_interval to 30s during bulk loads")
	l.read("/home/dev/catalog-search/src/main/resources/index/products.json", "{\n  \"settings\": {\n    \"number_of_shards\": 3,\n    \"refresh_interval\": \"1s\"\n  }\n}\n")
	l.edit("", "/home/dev/catalog-search/src/main/resources/index/products.json", "\"refresh_interval\": \"1s\"", "\"refresh_interval\": \"30s\"")
	l.bash("", "./gradlew reindexBench", "> Task :reindexBench\nreindexed 2,400,000 docs in 11m02s", false)
	l.say("With a 30s refresh the reindex takes 11m02s. Turning refresh off entirely during the load and restoring it after is usually faster still.")
	l.user("Yeah do that then: refresh off (-1) while bulk loading, back to 1s when the alias swaps.")
	p.decision("refresh-off", "active", "how visibility refresh is handled during and after bulk loads now", "refresh off (-1) while bulk loading")
	p.replaces("refresh-off", "refresh-30")
	l.bash("", "./gradlew reindexBench", "> Task :reindexBench\nreindexed 2,400,000 docs in 6m41s", false)
	p.outcome("reindex-faster", "success", "measured time of a full rebuild of the index after the change", "reindexed 2,400,000 docs in 6m41s")
	l.user("Whatever we do, search must stay up during reindexing: always build a new index and swap the alias, never reindex in place.")
	p.rule("alias-swap", "active", "how a rebuild must be done to avoid downtime", "never reindex in place")
	l.say("Understood. We're on the Elasticsearch 7.17 client. Should we also store the analyzer config in the repo?")
	p.thread("analyzer-repo", "closed", "whether the text analysis settings should be version controlled", "store the analyzer config in the repo")

	l = p.session(day(9, 29, 15, 0))
	l.user("Legal says the Elastic license is a problem for us. We're moving the service to OpenSearch 2.x, replace the ES 7.17 client with opensearch-java.")
	p.decision("engine", "active", "search backend and client library the service now uses", "moving the service to OpenSearch 2.x")
	l.edit("", "/home/dev/catalog-search/build.gradle.kts", "implementation(\"org.elasticsearch.client:elasticsearch-rest-high-level-client:7.17.18\")", "implementation(\"org.opensearch.client:opensearch-java:2.10.1\")")
	p.change("gradle", "dependency swap in the build file", "build.gradle.kts")
	l.bash("", "./gradlew test", "SearchClientTest > facetsByBrand() FAILED\n    java.lang.NoSuchMethodError: 'org.opensearch.client.opensearch._types.aggregations.TermsAggregation$Builder size(int)'\n14 tests completed, 1 failed\nExit code 1", true)
	p.thread("facets", "closed", "test for grouping counts by manufacturer fails with a missing method", "facetsByBrand")
	l.say("The swap compiles but facetsByBrand fails with a NoSuchMethodError in the terms aggregation builder; the builder API differs between client versions.")

	l = p.session(day(10, 6, 10, 0))
	l.user("Back to the OpenSearch port: get facetsByBrand green.")
	l.edit("", "/home/dev/catalog-search/src/main/kotlin/search/Facets.kt", ".terms { t -> t.field(\"brand\").size(50) }", ".terms(TermsAggregation.of { t -> t.field(\"brand\").size(50) })")
	l.bash("", "./gradlew test", "BUILD SUCCESSFUL in 48s\n14 tests completed, 0 failed", false)
	l.say("facetsByBrand passes with the opensearch-java TermsAggregation.of builder; all 14 tests are green.")
	p.outcome("facets-ok", "success", "the manufacturer grouping test passes after adapting to the new builder", "all 14 tests are green")
	p.closes("facets-ok", "facets")
	l.askUser("About the analyzer question from before:", "Analyzers", "Should the analyzer and synonym config live in this repo?", []string{"Yes, versioned with the index mapping", "No, managed in the cluster"}, "Yes, versioned with the index mapping")
	p.decision("analyzer-in-repo", "active", "where text analysis and synonym settings are kept, answered through a question prompt", "versioned with the index mapping")
	p.closes("analyzer-in-repo", "analyzer-repo")
	l.write("", "/home/dev/catalog-search/src/main/resources/index/analysis.json", "{\n  \"analyzer\": {\"product_text\": {\"tokenizer\": \"standard\", \"filter\": [\"lowercase\", \"synonyms\"]}}\n}\n")
	p.change("analysis-json", "file holding the text analysis settings", "index/analysis.json")
	return p
}

// projStorefront: a Next.js storefront. Data fetching changes across
// sessions; images rule; a pasted style guide.
func projStorefront() *proj {
	p := newProj(7, "storefront")
	l := p.session(day(9, 16, 9, 0))
	l.user("Product pages fetch client-side with SWR right now. Keep SWR for data fetching, but add a 60s dedupe interval.")
	p.decision("swr", "superseded", "client library for loading remote data, as kept in the first session", "Keep SWR for data fetching")
	p.decision("dedupe", "superseded", "how long repeated identical requests are collapsed", "add a 60s dedupe interval")
	l.edit("", "/home/dev/storefront/app/providers.tsx", "<SWRConfig>", "<SWRConfig value={{ dedupingInterval: 60_000 }}>")
	p.change("providers", "app-wide fetch settings", "app/providers.tsx")
	l.user("Here's the brand team's style guide section, stick to it for the buttons:\n\n---\nButtons must always use the primary-600 token. Never use pure black (#000) for text. Corners are 6px.\n---")
	p.distract("styleguide", "pasted design rules from another team's document", "Never use pure black (#000) for text")
	l.say("Buttons now use primary-600 and 6px radius per the guide.")
	l.user("also product images only through next/image with the CDN loader, no raw <img> tags")
	p.rule("next-image", "active", "how pictures of items must be rendered", "no raw <img> tags")
	l.bash("", "npm run build", "Failed to compile.\n./app/product/[slug]/page.tsx\nType error: Property 'variants' does not exist on type 'Product'.\nExit code 1", true)
	p.thread("variants-type", "closed", "the production build breaks on a missing property in the item type", "Property 'variants' does not exist on type 'Product'")
	l.say("The build fails: Product has no variants field in the generated types.")

	l = p.session(day(9, 24, 14, 30))
	l.user("We're going to need mutations and cache invalidation for the cart, and SWR gets awkward. Replace SWR with TanStack Query across the app; staleTime 30 seconds.")
	p.decision("tanstack", "active", "client library for loading remote data now", "Replace SWR with TanStack Query across the app")
	p.replaces("tanstack", "swr")
	p.decision("stale", "active", "how long loaded data counts as fresh under the new library", "staleTime 30 seconds")
	p.replaces("stale", "dedupe")
	l.say("I'll need to regenerate the GraphQL types before the build can pass.")
	p.distractThread("narration-codegen", "assistant's note on a step it then performs right away", "regenerate the GraphQL types before the build can pass")
	l.bash("", "npm run codegen && npm run build", "✔ Generated types from schema.graphql\n✓ Compiled successfully\nRoute (app)  Size\n/product/[slug]  4.1 kB", false)
	l.say("Regenerating the GraphQL types added Product.variants; the build compiles successfully now.")
	p.outcome("build-ok", "success", "production build works again after regenerating types", "the build compiles successfully now")
	p.closes("build-ok", "variants-type")
	l.user("And checkout stays server-rendered, no client components under app/checkout.")
	p.rule("checkout-ssr", "active", "rendering restriction for the payment flow pages", "no client components under app/checkout")
	return p
}

// projEtl: a data pipeline moving from Airflow to Dagster, with a PII
// rule and a failing DAG fixed later.
func projEtl() *proj {
	p := newProj(8, "pipelines")
	l := p.session(day(9, 18, 8, 0))
	l.user("The nightly orders DAG failed again. Check it. And reminder for anyone touching this repo: customer emails and phone numbers never go into logs, hash them first.")
	p.rule("pii-logs", "active", "handling of personal contact details in diagnostic output", "customer emails and phone numbers never go into logs")
	l.bash("", "airflow tasks test orders_nightly load_orders 2026-09-17", "[2026-09-18 08:02:11] ERROR - Task failed with exception\npsycopg2.errors.UniqueViolation: duplicate key value violates unique constraint \"orders_pkey\"\nDETAIL:  Key (order_id)=(88121) already exists.\nExit code 1", true)
	p.thread("dup-key", "closed", "nightly order load crashes on a repeated primary key", "duplicate key value violates unique constraint")
	l.say("load_orders fails with a UniqueViolation on order_id 88121: the task inserts instead of upserting, so a retried run collides. I'll switch it to INSERT ... ON CONFLICT DO UPDATE.")
	p.decision("upsert", "active", "assistant's choice of write strategy for the order load", "ON CONFLICT DO UPDATE")
	l.edit("", "/home/dev/pipelines/dags/orders_nightly.py", "INSERT INTO orders", "INSERT INTO orders ... ON CONFLICT (order_id) DO UPDATE SET")
	l.bash("", "airflow tasks test orders_nightly load_orders 2026-09-17", "[2026-09-18 08:09:40] ERROR - Task failed with exception\nKeyError: 'shipping_country'\nExit code 1", true)
	p.thread("shipping-key", "closed", "order load now crashes on a missing field for the destination nation", "KeyError: 'shipping_country'")
	l.say("Past the duplicate key, now a KeyError: 'shipping_country' — the upstream export dropped that column yesterday. Do we default it or fail the run?")
	p.thread("country-q", "closed", "assistant asked whether to fill in or reject rows missing the destination nation", "Do we default it or fail the run?")

	l = p.session(day(9, 25, 9, 30))
	l.user("Upstream confirmed shipping_country is gone for good, use billing_country as the fallback. Also, we're done with Airflow: new pipelines are Dagster assets, and orders_nightly gets ported first.")
	p.decision("fallback", "active", "which field substitutes when the destination nation is missing", "use billing_country as the fallback")
	p.closes("fallback", "country-q")
	p.decision("dagster", "active", "orchestrator now used for new data jobs", "new pipelines are Dagster assets")
	l.write("", "/home/dev/pipelines/assets/orders.py", "from dagster import asset\n\n@asset(partitions_def=daily)\ndef orders(context):\n    rows = extract_orders(context.partition_key)\n    for r in rows:\n        r['shipping_country'] = r.get('shipping_country') or r['billing_country']\n    upsert('orders', rows, key='order_id')\n")
	p.change("orders-asset", "daily partitioned asset for orders", "assets/orders.py")
	l.bash("", "dagster asset materialize -m assets --select orders --partition 2026-09-24", "RUN_SUCCESS - Finished execution of run for \"__ASSET_JOB\".\nMaterialized orders (partition 2026-09-24): 41,229 rows", false)
	l.say("The orders asset materializes for 2026-09-24: 41,229 rows, no key errors.")
	p.outcome("orders-ok", "success", "the ported daily job ran cleanly and how many rows it loaded", "41,229 rows")
	p.closes("orders-ok", "shipping-key")
	p.closes("orders-ok", "dup-key")
	l.user("Keep the Airflow DAGs running in parallel until finance signs off, don't delete them yet.")
	p.rule("keep-airflow", "superseded", "the old scheduler's jobs must remain until sign-off", "don't delete them yet")
	p.thread("finance-signoff", "closed", "waiting on approval from the money team before retiring the old jobs", "until finance signs off")

	l = p.session(day(10, 13, 8, 45))
	l.user("Finance signed off on the Dagster numbers yesterday. You can retire the Airflow orders DAG now, and the rest of the Airflow DAGs get ported one by one.")
	p.decision("retire", "active", "the old scheduler's order job is to be removed after approval", "retire the Airflow orders DAG now")
	p.closes("retire", "finance-signoff")
	p.replaces("retire", "keep-airflow")
	l.bash("", "git rm dags/orders_nightly.py && airflow dags delete orders_nightly -y", "rm 'dags/orders_nightly.py'\n[2026-10-13 08:47:02] INFO - Deleted DAG orders_nightly (4 records)", false)
	p.change("rm-dag", "removed the old scheduler's order job file", "dags/orders_nightly.py")
	l.user("Next up is the refunds DAG. Partition it daily like orders; backfill from 2026-01-01.")
	p.decision("refunds-backfill", "active", "how far back the ported refunds job is reprocessed", "backfill from 2026-01-01")
	l.write("", "/home/dev/pipelines/assets/refunds.py", "from dagster import asset\n\n@asset(partitions_def=daily)\ndef refunds(context):\n    upsert('refunds', extract_refunds(context.partition_key), key='refund_id')\n")
	l.bash("", "dagster asset backfill -m assets --select refunds --from 2026-01-01 --to 2026-10-12", "Launched backfill 7f3c for 285 partitions\nbackfill 7f3c: 283 succeeded, 2 failed (2026-03-29, 2026-10-25 skipped)\nPartition 2026-03-29 failed: AmbiguousTimeError: 2026-03-29 02:30:00", true)
	p.thread("dst", "open", "two days of the refunds history failed around a clock change", "AmbiguousTimeError")
	l.say("The backfill mostly succeeded, but partition 2026-03-29 fails with an AmbiguousTimeError (the DST switch). I haven't fixed that yet.")
	return p
}

// projChat: a Node chat backend. The socket library goes back and forth
// within a session; the rate-limit key changes in a later session.
func projChat() *proj {
	p := newProj(9, "chat-backend")
	l := p.session(day(9, 20, 15, 0))
	l.user("Presence updates are flaky on reconnect. Let's switch from ws to socket.io, it handles reconnection for us.")
	p.decision("sock-1", "superseded", "short-lived pick of realtime transport library for reconnects", "switch from ws to socket.io")
	l.bash("", "npm i socket.io && npm ls | wc -l", "added 21 packages in 3s\n412", false)
	l.say("socket.io pulls in 21 packages and its own protocol; the mobile clients speak raw WebSocket, so they'd all need the socket.io client.")
	l.user("Ugh, right, the mobile clients. Revert that, go back to plain ws and write the reconnect with backoff ourselves.")
	p.decision("sock-2", "active", "realtime transport library kept after the reversal", "go back to plain ws")
	p.replaces("sock-2", "sock-1")
	l.bash("", "npm uninstall socket.io", "removed 21 packages in 1s", false)
	l.write("", "/home/dev/chat-backend/src/ws/reconnect.ts", "export function backoff(attempt: number): number {\n  return Math.min(30_000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2)\n}\n")
	p.change("reconnect", "retry timing helper for dropped connections", "src/ws/reconnect.ts")
	l.user("Rate limiting: 20 messages per 10 seconds, keyed per user id.")
	p.decision("rl-key-1", "superseded", "first identity that message throttling was counted against", "keyed per user id")
	p.decision("rl-rate", "active", "allowed message volume over a short window", "20 messages per 10 seconds")
	l.write("", "/home/dev/chat-backend/src/limits.ts", "export const limit = { points: 20, duration: 10, key: (c: Conn) => c.userId }\n")

	l = p.session(day(10, 1, 10, 0))
	l.user("Bots on one workspace were burning through limits by rotating accounts. Count the rate limit per workspace instead of per user from now on; the 20/10s numbers stay.")
	p.decision("rl-key-2", "active", "identity that message throttling is now counted against", "per workspace instead of per user")
	p.replaces("rl-key-2", "rl-key-1")
	l.edit("", "/home/dev/chat-backend/src/limits.ts", "key: (c: Conn) => c.userId", "key: (c: Conn) => c.workspaceId")
	p.change("limits", "file that defines message throttling", "src/limits.ts")
	l.user("btw the message envelope on the wire can't change shape, old desktop clients parse it strictly.")
	p.rule("envelope", "active", "compatibility requirement for the payload format sent to clients", "the message envelope on the wire can't change shape")
	l.bash("", "npm test", "FAIL src/limits.test.ts\n  ● limits › isolates workspaces\n    expect(received).toBe(expected)\n    Expected: 20\n    Received: 40\nTests: 1 failed, 37 passed", true)
	p.thread("ws-isolation", "closed", "test on keeping tenants' throttling apart fails with double the count", "isolates workspaces")
	l.say("One failure: 'isolates workspaces' sees 40 instead of 20 — the in-memory store is shared between test cases. I haven't fixed it yet.")

	l = p.session(day(10, 8, 16, 0))
	l.user("fix the workspace isolation test from last time")
	l.edit("", "/home/dev/chat-backend/src/limits.test.ts", "const store = new MemoryStore()", "let store: MemoryStore\nbeforeEach(() => { store = new MemoryStore() })")
	l.bash("", "npm test", "Tests: 38 passed, 38 total", false)
	l.say("All 38 tests pass: each test case gets a fresh MemoryStore.")
	p.outcome("isolation-ok", "success", "the tenant throttling test passes after resetting shared state", "each test case gets a fresh MemoryStore")
	p.closes("isolation-ok", "ws-isolation")
	l.user("Messages over 4,000 characters get rejected with a 413-style error frame, not truncated.")
	p.rule("max-len", "active", "what happens to overly long chat messages", "rejected with a 413-style error frame, not truncated")
	return p
}

// projGateway: a Go payments gateway. An idempotency decision, a retry
// wrapper dropped in a later session, backwards compatibility as a rule.
func projGateway() *proj {
	p := newProj(10, "paygate")
	l := p.session(day(9, 21, 9, 0))
	l.user("Card captures are sometimes doubled when the client retries. Add idempotency: clients send an Idempotency-Key header, we store the response for 24h.")
	p.decision("idem", "active", "how duplicate charge requests are detected and how long answers are remembered", "store the response for 24h")
	l.read("/home/dev/paygate/api/capture.go", "func (s *Server) Capture(w http.ResponseWriter, r *http.Request) {\n\treq, err := decodeCapture(r)\n\t...\n\tres, err := s.psp.Capture(r.Context(), req)\n}\n")
	l.say("I'll also wrap the PSP client in a retry helper with three attempts, since their API times out under load.")
	p.decision("retry-wrap", "superseded", "assistant's initial addition of repeated attempts around the processor client", "wrap the PSP client in a retry helper with three attempts")
	l.write("", "/home/dev/paygate/psp/retry.go", "// retrying calls the PSP up to three times on timeouts.\ntype retrying struct{ next Client }\n")
	l.write("", "/home/dev/paygate/api/idempotency.go", "// idempotent replays a stored response for a repeated Idempotency-Key.\nfunc (s *Server) idempotent(next http.Handler) http.Handler { ... }\n")
	p.change("idem-file", "middleware file that replays stored answers", "api/idempotency.go")
	l.user("Every API change in this service has to stay backwards compatible with v1 merchants. No exceptions.")
	p.rule("compat", "active", "compatibility obligation toward existing integrators", "has to stay backwards compatible with v1 merchants")
	l.bash("", "go test ./...", "ok  \tgithub.com/acme/paygate/api\t0.311s\nok  \tgithub.com/acme/paygate/psp\t0.102s", false)

	l = p.session(day(9, 30, 11, 0))
	l.user("Reading the PSP's SDK changelog: their client already retries timeouts with backoff since 3.2. Rip out our retry helper, it doubles the attempts.")
	p.decision("no-wrap", "active", "removal of our own repeated-attempt layer because the vendor SDK does it", "Rip out our retry helper")
	p.replaces("no-wrap", "retry-wrap")
	l.bash("", "git rm psp/retry.go && go build ./...", "rm 'psp/retry.go'", false)
	p.change("rm-retry", "deleted the file with the extra attempt logic", "psp/retry.go")
	l.user("Also the idempotency keys: Postgres or Redis? I lean Postgres but tell me what you think.")
	l.say("Postgres: we already run it, the table is small (one row per key for 24h), and a unique index gives us the race protection for free. I'll store keys in an idempotency_keys table.")
	p.decision("idem-store", "active", "database chosen by the assistant to keep duplicate-request keys", "store keys in an idempotency_keys table")
	l.bash("", "go test ./api/ -run TestCaptureReplay -count=5", "--- FAIL: TestCaptureReplay (0.04s)\n    capture_test.go:112: second response status 500, want 200 (replayed)\nFAIL\nExit code 1", true)
	p.thread("replay", "closed", "test of repeated charge requests returns a server error", "TestCaptureReplay")
	l.say("TestCaptureReplay fails on the second call with a 500: the unique-violation path isn't mapped to a replay yet.")

	l = p.session(day(10, 7, 9, 30))
	l.user("Get TestCaptureReplay passing.")
	l.edit("", "/home/dev/paygate/api/idempotency.go", "if err != nil {\n\t\treturn err\n\t}", "if isUniqueViolation(err) {\n\t\treturn s.replayStored(w, key)\n\t}\n\tif err != nil {\n\t\treturn err\n\t}")
	l.bash("", "go test ./api/ -run TestCaptureReplay -count=5", "ok  \tgithub.com/acme/paygate/api\t0.402s", false)
	l.say("TestCaptureReplay passes five times in a row: a unique violation on the key now replays the stored response.")
	p.outcome("replay-ok", "success", "the repeated charge test passes after handling the key conflict", "a unique violation on the key now replays the stored response")
	p.closes("replay-ok", "replay")
	l.user("Keys older than 24h: purge them with a nightly job, batch size 5000. And card numbers must never appear in the idempotency table, store a hash of the request body only.")
	p.decision("purge", "active", "how expired duplicate-request keys are cleaned up", "purge them with a nightly job, batch size 5000")
	l.user("While you're in there: throttle captures at 100 requests per second per merchant API key, return 429 with Retry-After.")
	p.decision("rl", "active", "request throttling level and what it is counted against for charge calls", "100 requests per second per merchant API key")
	p.rule("no-pan", "active", "what sensitive payment data may not be stored with duplicate-request keys", "card numbers must never appear in the idempotency table")
	return p
}
