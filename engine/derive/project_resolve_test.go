package derive

import "testing"

func TestNegates(t *testing.T) {
	for _, tt := range []struct {
		d, e string
		want bool
	}{
		{"And don't hard-pin the VPC module, use a range ~> 5.8.", "I'll also pin the VPC module to 5.1.2.", true},
		{"Don't touch the billing code.", "I'll also pin the VPC module to 5.1.2.", false},
		{"Do not cache the module list.", "Pin the VPC module to 5.1.2.", false},
		{"Stop retrying the upload job.", "Keep retrying the upload job three times.", true},
	} {
		if got := negates(tt.d, tt.e); got != tt.want {
			t.Errorf("negates(%q, %q) = %v", tt.d, tt.e, got)
		}
	}
}

func TestInsteadOf(t *testing.T) {
	for _, tt := range []struct {
		d, e string
		want bool
	}{
		{"Count the rate limit per workspace instead of per user from now on.", "Rate limiting: 20 messages per 10 seconds, keyed per user id.", true},
		{"Use a map instead of a slice for the lookup.", "Rate limiting: 20 messages per 10 seconds, keyed per user id.", false},
		{"Count the rate limit per workspace instead of per user.", "Send the user a welcome email.", false},
	} {
		if _, got := insteadOf(tt.d, tt.e); got != tt.want {
			t.Errorf("insteadOf(%q, %q) = %v", tt.d, tt.e, got)
		}
	}
}

func TestRunKey(t *testing.T) {
	for in, want := range map[string]string{
		"python train.py --config summ.yaml": "python train.py",
		"python3 scripts/convert.py":         "python3 convert.py",
		"python -m pytest -q":                "python pytest",
		"python -c 'print(1)'":               "python",
		"npm run build":                      "npm run build",
	} {
		if got := runKey(in); got != want {
			t.Errorf("runKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConflictsQuantityAndTool: a quantity does not replace a named tool
// on a subject read from a word both mention; a time of day set anew
// replaces the old one and leaves the tool chosen beside it.
func TestConflictsQuantityAndTool(t *testing.T) {
	tempo := &Decision{Statement: "Tempo via OTLP", Subject: "tracing", Chooses: []string{"tempo via otlp"}}
	five := &Decision{Statement: "Go down to 5% for the non-error traces.", Subject: "tracing", Chooses: []string{"5"}}
	if conflicts(five, tempo) {
		t.Error("a sampling ratio replaced the trace exporter")
	}
	jaeger := &Decision{Statement: "Send traces to Jaeger.", Subject: "tracing", Chooses: []string{"jaeger"}}
	if !conflicts(jaeger, tempo) {
		t.Error("another exporter did not replace Tempo")
	}
	head := "Move them to sidekiq-cron, schedule 02:00 UTC on the 1st."
	tool := &Decision{Statement: head, Setting: "move them to sidekiq-cron", Subject: "scheduler", Chooses: []string{"move them to sidekiq-cron"}}
	at := &Decision{Statement: head, Setting: "schedule 02:00 utc on the 1st", Subject: "schedule utc", Chooses: []string{"schedule 02:00 utc on the 1st"}}
	later := &Decision{Statement: "Move the run to 23:00 UTC on the last day of the month instead.", Subject: "run", Chooses: []string{"23"}}
	if !conflicts(later, at) || conflicts(later, tool) {
		t.Errorf("a new run time: replaces the time %v, the scheduler %v; want true, false", conflicts(later, at), conflicts(later, tool))
	}
}
