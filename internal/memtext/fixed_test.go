package memtext

import (
	"reflect"
	"testing"
)

func TestFixedErrors(t *testing.T) {
	cases := []struct {
		text string
		want [][]string
	}{
		{"The orders asset materializes for 2026-09-24: 41,229 rows, no key errors.", [][]string{{"key"}}},
		{"It runs without any KeyError now.", [][]string{{"key"}}},
		{"The timeout error is gone.", [][]string{{"timeout"}}},
		{"I fixed the import error in cli.", [][]string{{"import"}}},
		{"No more connection reset errors since the retry.", [][]string{{"connection", "reset"}}},
		{"The UniqueViolation exception no longer occurs.", [][]string{{"unique", "violation"}}},
		// Errors named by no word, or not said to be gone.
		{"The build passes with no errors.", nil},
		{"No more failures.", nil},
		{"There is a key error in the loader.", nil},
		{"No, the failure is still there.", nil},
	}
	for _, c := range cases {
		if got := FixedErrors(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("FixedErrors(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestErrorFixed(t *testing.T) {
	dup := `psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint "orders_pkey"`
	cases := []struct {
		report, line string
		want         bool
	}{
		{"41,229 rows, no key errors.", "KeyError: 'shipping_country'", true},
		{"41,229 rows, no key errors.", dup, true},
		{"No more duplicate keys.", dup, false}, // no error noun
		{"no timeout errors", "KeyError: 'shipping_country'", false},
		{"The shipping country error is gone.", "KeyError: 'shipping_country'", true},
		{"The build passes with no errors.", "KeyError: 'shipping_country'", false},
	}
	for _, c := range cases {
		if got := ErrorFixed(c.report, c.line); got != c.want {
			t.Errorf("ErrorFixed(%q, %q) = %v, want %v", c.report, c.line, got, c.want)
		}
	}
}
