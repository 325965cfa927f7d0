package testkit

import "testing"

// Must fails the test at once on err: for setup steps whose failure leaves
// nothing to check.
func Must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
