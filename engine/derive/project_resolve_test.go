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
