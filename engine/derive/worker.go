package derive

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
)

// workerPanic carries a panic of a derivation worker goroutine to the
// goroutine that waits for its result, which panics again there
// (rethrow): callers recover panics at the derivation boundary (the
// proxy's canonicalizer does, so that a panic never takes the proxy
// down), and a recover sees only its own goroutine's panics.
type workerPanic struct {
	v     any
	stack []byte
}

func (p *workerPanic) Error() string { return fmt.Sprintf("a derivation worker panicked: %v", p.v) }

// catch, deferred in a worker, turns its panic into a *workerPanic in
// *err.
func catch(err *error) {
	if v := recover(); v != nil {
		*err = &workerPanic{v: v, stack: debug.Stack()}
	}
}

// rethrow panics again, on the calling goroutine, with what a worker
// panicked with, when err is a *workerPanic.
func rethrow(err error) {
	var p *workerPanic
	if errors.As(err, &p) {
		panic(fmt.Sprintf("%v (in a derivation worker)\n%s", p.v, p.stack))
	}
}

// largestFirst hands the jobs queued to workers, the largest first. The
// derivation phases admit jobs in the order they apply results, a
// window at a time, and the sessions of a pass differ in size by a
// hundred times: taken in order, the largest, if it came last, would
// run alone while the other workers waited. It is safe for concurrent
// use.
type largestFirst[T any] struct {
	mu     sync.Mutex
	more   sync.Cond
	jobs   []sized[T]
	closed bool
}

type sized[T any] struct {
	size int64
	job  T
}

func newLargestFirst[T any]() *largestFirst[T] {
	q := &largestFirst[T]{}
	q.more.L = &q.mu
	return q
}

// push queues job, of size size.
func (q *largestFirst[T]) push(size int64, job T) {
	q.mu.Lock()
	q.jobs = append(q.jobs, sized[T]{size, job})
	q.mu.Unlock()
	q.more.Signal()
}

// pop returns the largest job queued (of equal ones the first pushed),
// waiting for one; false once the queue is closed and empty.
func (q *largestFirst[T]) pop() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.jobs) == 0 && !q.closed {
		q.more.Wait()
	}
	if len(q.jobs) == 0 {
		var zero T
		return zero, false
	}
	best := 0
	for i := range q.jobs {
		if q.jobs[i].size > q.jobs[best].size {
			best = i
		}
	}
	job := q.jobs[best].job
	q.jobs = slices.Delete(q.jobs, best, best+1)
	return job, true
}

// close ends the queue: pop returns what is left, then false.
func (q *largestFirst[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.more.Broadcast()
}
