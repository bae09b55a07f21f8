package index

import (
	"strings"

	"github.com/bbengine/bbengine/engine"
)

// boostIntent multiplies the score of a result of the type a query asks
// for (see intentOf).
const boostIntent = 1.6

// intentOf returns the artifact type a question's form asks for, or ""
// when its form says nothing:
//
//   - what happened, was measured or passed ("how did we fix …", "how
//     long does … take now", "does … pass now", "how many rows …") and
//     where a change went ("where is …", "which file …", "where are …
//     configured") ask for an outcome, which lists the files a task
//     changed;
//   - whether work is still open ("… — fixed?", "what's the status",
//     "is it still …", "did we ever settle …", "still need …") asks for
//     a thread.
//
// It reads the question's form, never its subject, so it holds for any
// project.
func intentOf(text string) engine.ArtifactType {
	low := " " + strings.Join(strings.Fields(strings.ToLower(text)), " ") + " "
	has := func(ps ...string) bool {
		for _, p := range ps {
			if strings.Contains(low, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has(" fixed? ", " fixed?", " what's the status", " what is the status", " is it still", " still open", " still failing",
		" still need", " ever settle", " still missing", " what came of "):
		return engine.ArtifactThread
	case has(" how did we fix", " how did we get ", " how were ", " how was ", " pass now", " passing now", " passing again",
		" how long does", " how long did", " how fast ", " how many rows", " how big ", " size after ", " take now",
		" where is ", " where's ", " where are ", " which file", " which config file", " what file"):
		return engine.ArtifactOutcome
	}
	return ""
}
