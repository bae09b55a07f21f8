package api_test

import (
	"context"
	"fmt"
	"os"

	"github.com/bbengine/bbengine/api"
)

// ExampleOpen opens a data directory (here a new one, so in this
// process: with a proxy running, Open returns its client instead),
// records a task's outcome and finds it again.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "bbengine-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	s, closeService, err := api.Open(context.Background(), dir, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer closeService()
	if _, err := s.Note(api.Note{Op: "outcome", Session: "s1", TaskID: "t1", Status: "success",
		Text: "Moved the session cache to ARC.", Source: "run"}); err != nil {
		fmt.Println(err)
		return
	}
	cards, err := s.Search(api.SearchRequest{Text: "session cache", K: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cards {
		fmt.Println(c.Type, c.Title)
	}
	// Output:
	// outcome Moved the session cache to ARC. (t1, success)
}
