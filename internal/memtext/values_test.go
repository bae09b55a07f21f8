package memtext

import (
	"reflect"
	"testing"
)

func TestValues(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []Value
	}{
		{"sample the rest at 10%", []Value{{"10", "%"}}},
		{"Deploy with 1024 MB memory and a 20 s timeout, arm64.", []Value{{"1024", "mb"}, {"20", "s"}}},
		{"bring memory down to 512MB", []Value{{"512", "mb"}}},
		{"Make it 5 minutes", []Value{{"5", "min"}}},
		{"Server tick rate 30 Hz for now.", []Value{{"30", "hz"}}},
		{"Messages over 4,000 characters", nil},
		{"schedule 02:00 UTC on the 1st", []Value{{"2:00", "clock"}}},
		{"move the run to 23:00 UTC", []Value{{"23:00", "clock"}}},
		{"at 10:30:15 the job failed", nil},
		{"python3.12 and v2 and sha256", nil},
		{"retry 3 times", nil},
		{"Queue mailers with concurrency 10.", []Value{{"10", "concurrency"}}},
		{"purge them with a nightly job, batch size 5000", []Value{{"5000", "size"}}},
	} {
		if got := Values(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Values(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	for in, want := range map[string]bool{
		"Go down to 5% for the non-error traces.":     true,
		"Bump the tick to 60 Hz":                      true,
		"marketing stays on mailers but drop it to 5": true,
		"Sample the rest at 10%.":                     false,
		"Follow up to the thread":                     false,
	} {
		if got := RelativeChange(in); got != want {
			t.Errorf("RelativeChange(%q) = %v", in, got)
		}
	}
}

func TestFailureDetails(t *testing.T) {
	for _, tt := range []struct {
		out  string
		want []string
	}{
		{"FAIL e2e/sync.test.ts\n  ● sync › uploads queued photos when back online\n    Timed out\nExit code 1",
			[]string{"● sync › uploads queued photos when back online"}},
		{"Failures:\n  1) MonthlyInvoicesJob skips cancelled subscriptions\n     Failure/Error: expect(x).to eq(2)\n",
			[]string{"1) MonthlyInvoicesJob skips cancelled subscriptions"}}, // the Failure/Error line is FirstErrorLine's
		{"Error: Unsupported argument\n  on main.tf line 14:\n  14:   enable_classiclink = false\nExit code 1",
			[]string{"on main.tf line 14:", "14:   enable_classiclink = false"}},
		{"all good\n", nil},
	} {
		if got := FailureDetails(tt.out, 3); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("FailureDetails(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
	for _, tt := range []struct{ cmd, out, want string }{
		{"python train.py", "Traceback (most recent call last):\nValueError: x", "Run"},
		{"terraform plan", "Error: Unsupported argument", "Run"},
		{"npx jest", "FAIL x", "Test run"},
		{"grep -r foo .", "", ""},
		{"python -c 'print(1)\\'", "  File \"<string>\", line 1\nSyntaxError: unexpected character after line continuation character", "Run"},
		{"gh pr view", "Error: no pull requests found for branch", ""},
		{"act -j test", "[CI/test] Job 'test' failed", "CI job"},
		{"cat missing.txt", "cat: missing.txt: No such file or directory", ""},
	} {
		if got := FailureKind(tt.cmd, tt.out); got != tt.want {
			t.Errorf("FailureKind(%q) = %q, want %q", tt.cmd, got, tt.want)
		}
	}
}

func TestSettingName(t *testing.T) {
	for in, want := range map[string]string{
		"learning rate 3e-5": "learning rate",
		"batch size 16":      "batch size",
		"1024 mb memory":     "memory",
		"20 s timeout":       "timeout",
		"bf16":               "numeric precision",
		"lr 1e-4":            "learning rate",
		"3 epochs":           "epochs",
	} {
		if got := SettingName(in); got != want {
			t.Errorf("SettingName(%q) = %q, want %q", in, got, want)
		}
	}
}
