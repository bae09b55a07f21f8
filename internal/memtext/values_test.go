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
		{"schedule 02:00 UTC on the 1st", nil},
		{"python3.12 and v2 and sha256", nil},
		{"retry 3 times", nil},
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
