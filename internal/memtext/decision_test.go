package memtext

import (
	"slices"
	"testing"
)

// TestFindDecisionKinds covers the kinds of decision people state, in
// wording of our own: reversals, corrections, "from now on", settings in
// a task request, an assistant's choice after looking into something.
func TestFindDecisionKinds(t *testing.T) {
	tests := []struct {
		role, text        string
		subject           string
		chooses, replaces []string
	}{
		{role: "user", text: "Actually, ditch the caching layer, the CDN already caches responses.", subject: "cache", replaces: []string{"caching layer"}},
		{role: "user", text: "We're migrating off Travis; GitHub Actions going forward.", subject: "ci system", chooses: []string{"github actions"}, replaces: []string{"travis"}},
		{role: "user", text: "We are moving away from Jenkins, Buildkite from now on.", subject: "ci system", chooses: []string{"buildkite"}, replaces: []string{"jenkins"}},
		{role: "user", text: "Let's go back to the single-threaded scheduler.", chooses: []string{"single-threaded scheduler"}},
		{role: "user", text: "Revert to the token bucket limiter.", chooses: []string{"token bucket limiter"}},
		{role: "user", text: "Make the rate limit key the API token, not the client IP.", subject: "rate limit key", chooses: []string{"api token"}, replaces: []string{"client ip"}},
		{role: "user", text: "Stick with Postgres for now.", subject: "database", chooses: []string{"postgres"}},
		{role: "user", text: "Let's not use Celery here.", subject: "queue", replaces: []string{"celery"}},
		{role: "user", text: "Switch to Atlas for migrations.", subject: "migration tool", chooses: []string{"atlas"}},
		{role: "user", text: "Use goose to run the schema changes.", subject: "migration tool", chooses: []string{"goose"}},
		{role: "user", text: "Switch the build to Bazel.", subject: "build system", chooses: []string{"bazel"}},
		{role: "user", text: "Fine-tune it using a 2e-5 learning rate and 3 epochs.", subject: "fine-tuning settings", chooses: []string{"2e-5 learning rate", "3 epochs"}},
		{role: "user", text: "Train with warmup 500 steps, bf16 and batch size 64.", subject: "training settings", chooses: []string{"warmup 500 steps", "bf16", "batch size 64"}},
		{role: "user", text: "Do the rename in a migration instead.", subject: "migration tool"},
		{role: "user", text: "No more mocks in the storage tests.", replaces: []string{"mocks"}},
		{role: "user", text: "We won't use an ORM.", subject: "orm", replaces: []string{"orm"}},
		{role: "user", text: "Set the request timeout to 30s.", subject: "request timeout", chooses: []string{"30s"}},
		{role: "user", text: "Keep using zap.", subject: "logging library", chooses: []string{"zap"}},
		{role: "user", text: "Stop using the global logger.", subject: "logging library", replaces: []string{"global logger"}},
		{role: "assistant", text: "The simplest fix is to use a buffered channel.", chooses: []string{"buffered channel"}},
		{role: "user", text: "Use a sync.Map in `cache/lru.go` instead of the mutex.", subject: "locking", chooses: []string{"sync.map"}, replaces: []string{"mutex"}},
		{role: "user", text: "Put the request checks in `api/guard.go` instead.", subject: "api/guard.go"},
		{role: "assistant", text: "I'm going to switch the parser to nom.", subject: "parser", chooses: []string{"nom"}},
		{role: "assistant", text: "After profiling, I'll use a sync.Pool instead of allocating per request.", chooses: []string{"sync.pool"}, replaces: []string{"allocating per request"}},
		{role: "assistant", text: "Switch from SQLite to BoltDB for the job store, since we need no SQL.", subject: "database", chooses: []string{"boltdb"}, replaces: []string{"sqlite"}},
	}
	for _, tt := range tests {
		var got *Finding
		for _, f := range Find(tt.text, FindOptions{Role: tt.role}) {
			if f.Type == TypeDecision {
				got = &f
				break
			}
		}
		if got == nil {
			t.Errorf("Find(%q, %s): no decision", tt.text, tt.role)
			continue
		}
		if got.Subject != tt.subject || !slices.Equal(got.Chooses, tt.chooses) || !slices.Equal(got.Replaces, tt.replaces) {
			t.Errorf("Find(%q, %s):\n got subject=%q (%s) chooses=%q replaces=%q\nwant subject=%q chooses=%q replaces=%q",
				tt.text, tt.role, got.Subject, got.SubjectFrom, got.Chooses, got.Replaces, tt.subject, tt.chooses, tt.replaces)
		}
		if got.Subject != "" && got.SubjectFrom == "" {
			t.Errorf("Find(%q): subject %q with no reason", tt.text, got.Subject)
		}
	}
}

// TestFindDecisionNegatives are sentences near the decision patterns
// that decide nothing.
func TestFindDecisionNegatives(t *testing.T) {
	tests := []struct{ role, text string }{
		{"assistant", "Let me go back to the file and check the imports."},
		{"user", "If we switch to Atlas, what breaks?"},
		{"user", "Run the tests with -race."},
		{"user", "Make sure the tests pass."},
		{"user", "Make the button blue."},
		{"user", "It works fine instead."},
		{"user", "We could go back to the old scheduler."},
		{"user", "Set up the repo to build with make."},
		{"assistant", "I'll keep looking at the handler."},
		{"assistant", "Stop using the global logger."},
		{"user", "Should we stick with Postgres?"},
		{"assistant", "Now I'm going to run the test suite again."},
		{"assistant", "Move to Settings > Privacy and turn it off."},
		{"user", "Train the model and report the loss."},
	}
	for _, tt := range tests {
		for _, f := range Find(tt.text, FindOptions{Role: tt.role}) {
			if f.Type == TypeDecision {
				t.Errorf("Find(%q, %s) = decision %+v, want none", tt.text, tt.role, f)
			}
		}
	}
}

// TestSubjectsAgree checks that differently worded decisions about one
// job get one subject, so that the later supersedes the earlier.
func TestSubjectsAgree(t *testing.T) {
	groups := [][]string{
		{"Switch to Atlas for migrations.", "Use goose to run the migrations.", "We decided to use Flyway.", "Let's go with dbmate for schema migrations."},
		{"Use zerolog for logging.", "We're switching the logger to slog.", "Stick with logrus."},
		{"Let's use pnpm.", "Switch to yarn as the package manager.", "We'll use npm instead of bun."},
		{"Use Sentry for crash reporting.", "We're moving off Sentry; Rollbar from now on.", "Stick with bugsnag."},
		{"Keep LaunchDarkly for feature flags.", "Switch to Unleash.", "Let's go with flagsmith for feature flags."},
	}
	for _, g := range groups {
		want := ""
		for _, text := range g {
			var subj string
			for _, f := range Find(text, FindOptions{Role: "user"}) {
				if f.Type == TypeDecision {
					subj = f.Subject
				}
			}
			if subj == "" {
				t.Errorf("Find(%q): no subject", text)
				continue
			}
			if want == "" {
				want = subj
			} else if subj != want {
				t.Errorf("Find(%q): subject %q, want %q as for %q", text, subj, want, g[0])
			}
		}
	}
}

func TestFindDontUseUse(t *testing.T) {
	fs := Find("Just so we're clear: don't use Slack for updates, use the issue tracker.", FindOptions{Role: "user"})
	var d, c bool
	for _, f := range fs {
		switch f.Type {
		case TypeDecision:
			d = true
			if !slices.Equal(f.Chooses, []string{"issue tracker"}) || !slices.Equal(f.Replaces, []string{"slack"}) {
				t.Errorf("decision chooses=%q replaces=%q", f.Chooses, f.Replaces)
			}
		case TypeConstraint:
			c = true
		}
	}
	if !d || !c {
		t.Errorf("Find = %+v, want a decision and a constraint", fs)
	}
}

func TestFindSettingsInRequests(t *testing.T) {
	tests := []struct {
		text, subject string
		chooses       []string
	}{
		{"let's bump the default request budget to 120 in the env file", "default request budget", []string{"120"}},
		{"Change the retry limit to 5.", "retry limit", []string{"5"}},
		{"Let's keep the old CLI name but point the script at the new module.", "", nil},
	}
	for _, tt := range tests {
		var got *Finding
		for _, f := range Find(tt.text, FindOptions{Role: "user"}) {
			if f.Type == TypeDecision {
				got = &f
			}
		}
		if got == nil {
			t.Errorf("Find(%q): no decision", tt.text)
			continue
		}
		if got.Subject != tt.subject || !slices.Equal(got.Chooses, tt.chooses) {
			t.Errorf("Find(%q): subject=%q chooses=%q, want %q %q", tt.text, got.Subject, got.Chooses, tt.subject, tt.chooses)
		}
	}
	for _, text := range []string{"Change to the repo root and build.", "Set it to whatever works.", "Let's keep going."} {
		for _, f := range Find(text, FindOptions{Role: "user"}) {
			if f.Type == TypeDecision {
				t.Errorf("Find(%q) = decision %+v, want none", text, f)
			}
		}
	}
}

func TestFindDecisionContext(t *testing.T) {
	fs := Find("The CLI needs a real argument parser now. Go with kong.", FindOptions{Role: "user"})
	if len(fs) != 1 || fs[0].Type != TypeDecision {
		t.Fatalf("Find = %+v, want one decision", fs)
	}
	f := fs[0]
	if f.Context != "The CLI needs a real argument parser now." || f.Subject != "argument parser" || !slices.Equal(f.Chooses, []string{"kong"}) {
		t.Errorf("context %q subject %q (%s) chooses %q", f.Context, f.Subject, f.SubjectFrom, f.Chooses)
	}
}

// TestFindPlanStatements: in a plan the user approved, an item that says
// how something is or works is a decision; steps of the work, status
// lines and notes are not. Outside a plan the same items are nothing.
func TestFindPlanStatements(t *testing.T) {
	plan := "## Moving the docs\n" +
		"1. Redirects from old page addresses go through the CDN's rules file.\n" +
		"2. Refunds: an order returned within 30 days is refunded in full.\n" +
		"3. Update the entry point to the new module.\n" +
		"4. Run the test suite.\n" +
		"5. Note: the build tool converts dashes to underscores.\n" +
		"6. Package name: `docs-site` ✓\n" +
		"7. All dependencies and metadata\n"
	var got []string
	for _, f := range Find(plan, FindOptions{Role: "user", Plan: true}) {
		if f.Type == TypeDecision {
			got = append(got, f.Sentence)
		}
	}
	want := []string{
		"Redirects from old page addresses go through the CDN's rules file.",
		"Refunds: an order returned within 30 days is refunded in full.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("plan decisions:\n got %q\nwant %q", got, want)
	}
	for _, f := range Find(plan, FindOptions{Role: "user"}) {
		if f.Type == TypeDecision && !slices.Contains(want, f.Sentence) && f.Sentence != "Update the entry point to the new module." {
			t.Errorf("outside a plan: decision %q", f.Sentence)
		}
	}
}

// TestSentenceSQLEllipsis: an ellipsis between SQL keywords does not end
// the sentence; one between words of prose does.
func TestSentenceSQLEllipsis(t *testing.T) {
	for text, n := range map[string]int{
		"I'll switch it to INSERT ... ON CONFLICT DO UPDATE.": 1,
		"We waited... Then it passed.":                        2,
	} {
		if got := len(sentences(nil, text)); got != n {
			t.Errorf("%q: %d sentences, want %d", text, got, n)
		}
	}
}

// TestFindAssistantChoice: the agent's "I'll …" after it looked into
// something is a decision when it names a concrete how; its next steps
// and chores are not.
func TestFindAssistantChoice(t *testing.T) {
	for text, want := range map[string]bool{
		"The poller never backs off, so a dead host gets hammered. I'll throttle reconnects to one every 10 seconds.": true,
		"The sessions table is tiny and we already run Redis. I'll keep tokens in a `token_store` hash.":              false, // keep is a chore verb
		"The sessions table is tiny and we already run Redis. I'll cache tokens in a session_tokens hash.":            true,
		"I'll batch the writes in groups of five, since the API limits us to 100 calls a minute.":                     true,
		"The build fails on two imports. I'll fix the two errors in parser.go.":                                       false,
		"Round 1 merged cleanly. Now I'll dispatch round 2 to all three teammates in parallel via SendMessage.":       false,
		"The config loader is fine. I'll look at the three call sites next.":                                          false,
		"I'll cache tokens in a session_tokens hash.":                                                                 false, // nothing found first, no reason
		"The tests pass now. I'll wrap up with a summary of the 3 changes.":                                           false,
	} {
		got := false
		for _, f := range Find(text, FindOptions{Role: "assistant"}) {
			got = got || f.Type == TypeDecision
		}
		if got != want {
			t.Errorf("%q: decision %v, want %v", text, got, want)
		}
	}
}

// TestValuesComparable: values of one dimension compare across units.
func TestValuesComparable(t *testing.T) {
	v := func(s string) Value { return Values(s)[0] }
	if !Comparable(v("30 seconds"), v("5 minutes")) || Comparable(v("30 seconds"), v("5 MB")) {
		t.Error("Comparable")
	}
	if !SameQuantity(v("30s"), v("30 seconds")) || !SameQuantity(v("1 h"), v("60 minutes")) || SameQuantity(v("30s"), v("5 minutes")) {
		t.Error("SameQuantity")
	}
}

// TestFindUserHow: a request that says how the change is done is a
// decision whose option is the how; a request that only says what to
// do, an aside and a content description are not.
func TestFindUserHow(t *testing.T) {
	for text, want := range map[string]string{
		"Queue the emails with sidekiq, 5 retries each.":                         "sidekiq",
		"Old rows: archive them with a weekly job, 1000 at a time.":              "weekly job",
		"Re-import the ledger from 2025-07-01.":                                  "2025-07-01",
		"Sign the session cookies with HS256, keys from the vault.":              "hs256",
		"Build the index as a nightly job.":                                      "nightly job",
		"Add a --verbose flag to the CLI.":                                       "",
		"FYI the deploy job runs on tags only and posts a note as a PR comment.": "",
		"Please add a section on how to install with `uv sync`.":                 "",
		"You can test it with `act`.":                                            "",
		"Run the suite with -race.":                                              "",
	} {
		got, found := "", false
		for _, f := range Find(text, FindOptions{Role: "user"}) {
			if f.Type == TypeDecision {
				found = true
				if len(f.Chooses) > 0 {
					got = f.Chooses[0]
				}
			}
		}
		if found != (want != "") || got != want {
			t.Errorf("%q: decision %v choosing %q, want %q", text, found, got, want)
		}
	}
	// In the agent's prompt to a subagent the same request is the
	// subagent's task.
	for _, f := range Find("Old rows: archive them with a weekly job, 1000 at a time.", FindOptions{Role: "user", Delegated: true}) {
		if f.Type == TypeDecision {
			t.Errorf("in a subagent's prompt: decision %q", f.Sentence)
		}
	}
}

// TestFindPermission: the user's go-ahead for a held-back change is a
// decision.
func TestFindPermission(t *testing.T) {
	for text, want := range map[string]bool{
		"QA signed off. You can remove the legacy importer now.": true,
		"Go ahead and delete the feature flag.":                  true,
		"You can run the tests now.":                             false,
		"You can see the logs in the dashboard.":                 false,
	} {
		got := false
		for _, f := range Find(text, FindOptions{Role: "user"}) {
			got = got || f.Type == TypeDecision
		}
		if got != want {
			t.Errorf("%q: decision %v, want %v", text, got, want)
		}
	}
}

// TestFindRejectedBefore: an option the sentence before calls wrong is
// what the decision replaces.
func TestFindRejectedBefore(t *testing.T) {
	fs := Find("Right, the polling loop was a mistake. Use inotify for the watcher.", FindOptions{Role: "user"})
	if len(fs) != 1 || !slices.Equal(fs[0].Replaces, []string{"polling loop"}) {
		t.Fatalf("findings %+v", fs)
	}
}

// TestFindChangeList: several changes in one request are several
// settings, each named by what it sets; a list of chores is none.
func TestFindChangeList(t *testing.T) {
	fs := Find("Retry the export but halve the workers and use compression level 3, and cap the batch at 500.", FindOptions{Role: "user"})
	if len(fs) != 1 || !fs[0].Settings || fs[0].Head != "Retry the export" ||
		!slices.Equal(fs[0].Chooses, []string{"halve the workers", "use compression level 3", "cap the batch at 500"}) {
		t.Fatalf("findings %+v", fs)
	}
	for item, name := range map[string]string{"halve the workers": "workers", "cap the batch at 500": "batch size", "drop the lr to 2e-5": "learning rate"} {
		if got := SettingName(item); got != name {
			t.Errorf("SettingName(%q) = %q, want %q", item, got, name)
		}
	}
	for _, f := range Find("Fix the parser, then add a test and update the docs.", FindOptions{Role: "user"}) {
		if f.Settings {
			t.Errorf("chores read as settings: %+v", f)
		}
	}
}

// TestFindToolStatement: the user stating which known tool does a job
// is a decision on that job; a tool left behind, negated or merely
// mentioned in a request is not chosen.
func TestFindToolStatement(t *testing.T) {
	for text, want := range map[string][2]string{
		"The resizer uses libvips for thumbnails.":                      {"image library", "libvips"},
		"Migrations in this repo are applied by flyway at deploy time.": {"migration tool", "flyway"},
		"We're done with Jenkins: new jobs are Buildkite pipelines.":    {"ci system", "buildkite pipelines"},
		"It does not use redis for sessions.":                           {"", ""},
		"We're moving off celery next quarter.":                         {"", ""},
	} {
		subj, choice := "", ""
		for _, f := range Find(text, FindOptions{Role: "user"}) {
			if f.Type == TypeDecision && len(f.Chooses) > 0 {
				subj, choice = f.Subject, f.Chooses[0]
			}
		}
		if subj != want[0] || choice != want[1] {
			t.Errorf("%q: subject %q choosing %q, want %q", text, subj, choice, want)
		}
	}
}

// TestFindChangeListAfterDecision: after a first clause that decides,
// any imperative with a value opens a clause of its own.
func TestFindChangeListAfterDecision(t *testing.T) {
	fs := Find("Move the reports to the queue, schedule them at 06:30 UTC on Mondays.", FindOptions{Role: "user"})
	if len(fs) != 1 || !fs[0].Settings || !slices.Equal(fs[0].Chooses, []string{"move the reports to the queue", "schedule them at 06:30 utc on mondays"}) {
		t.Fatalf("findings %+v", fs)
	}
}

// TestFindStatedDesign: the way given after a prohibition, what the
// system does in the user's present ("we store …"), and a setting named
// with its default are decisions; the rule stays a constraint.
func TestFindStatedDesign(t *testing.T) {
	types := func(text string) (dec, con bool, chooses []string) {
		for _, f := range Find(text, FindOptions{Role: "user"}) {
			switch f.Type {
			case TypeDecision:
				dec, chooses = true, f.Chooses
			case TypeConstraint:
				con = true
			}
		}
		return
	}
	if dec, con, _ := types("For the importer: don't call the live API in tests, inject a FakeClient and replay fixtures."); !dec || !con {
		t.Errorf("prohibition with its way: decision %v, constraint %v", dec, con)
	}
	if dec, _, _ := types("Don't push yet, just commit locally."); dec {
		t.Error("a prohibition's vague alternative read as a decision")
	}
	if dec, _, _ := types("Add caching: clients send an ETag, we keep the body for 10 minutes."); !dec {
		t.Error("\"we keep … for 10 minutes\" is no decision")
	}
	if dec, _, _ := types("We need to look at this for 10 minutes."); dec {
		t.Error("\"we need …\" read as a decision")
	}
	if dec, _, ch := types("Session lifetime is the config key auth.session_ttl, default 12h."); !dec || !slices.Equal(ch, []string{"auth.session_ttl"}) {
		t.Errorf("config key with its default: decision %v choosing %q", dec, ch)
	}
	// A decision right after another is told without it as context.
	fs := Find("Use Postgres for the store. Keep the pool at 20 connections.", FindOptions{Role: "user"})
	if len(fs) != 2 || fs[1].Context != "" {
		t.Errorf("findings %+v", fs)
	}
}

// TestFindSettingsSwitch: a switch's value ("on", "off") ends its item
// and the list goes on after it.
func TestFindSettingsSwitch(t *testing.T) {
	fs := Find("Kick off the run on the small split: learning rate 3e-5, fp16 off, 3 epochs.", FindOptions{Role: "user"})
	if len(fs) != 1 || !slices.Equal(fs[0].Chooses, []string{"learning rate 3e-5", "fp16 off", "3 epochs"}) {
		t.Fatalf("findings %+v", fs)
	}
}

// TestFindLabelledHowList: a label that is a request opens a list of how
// it is done, one decision per item; a reply's opener does not.
func TestFindLabelledHowList(t *testing.T) {
	fs := Find("Add response caching: keep all lookups, expire the rest after 10 minutes.", FindOptions{Role: "user"})
	if len(fs) != 1 || !fs[0].Settings || fs[0].Head != "Add response caching" || len(fs[0].Chooses) != 2 {
		t.Fatalf("findings %+v", fs)
	}
	for _, f := range Find("Yeah do that then: refresh off while loading, back to 1s after.", FindOptions{Role: "user"}) {
		if f.Settings && f.Head != "" {
			t.Errorf("a reply's opener read as a label: %+v", f)
		}
	}
}
