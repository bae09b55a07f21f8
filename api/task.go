package api

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/engine"
)

// NextTask is the id of a session's next task: task-N+1 when its tasks
// include task-N and no higher (tasks bbengine run started before, and
// X-Bb-Task-Id values of that form), task-1 for a session s does not
// know.
func NextTask(m Service, session string) (string, error) {
	cards, err := m.List(ListRequest{Session: session, Types: []engine.ArtifactType{engine.ArtifactOutcome}})
	if errors.Is(err, engine.ErrNotFound) {
		return "task-1", nil
	}
	if err != nil {
		return "", err
	}
	n := 0
	for _, c := range cards {
		if k, err := strconv.Atoi(strings.TrimPrefix(c.Task, "task-")); err == nil && strings.HasPrefix(c.Task, "task-") && k > n {
			n = k
		}
	}
	return fmt.Sprintf("task-%d", n+1), nil
}
