package standalone

import (
	"sync"
	"time"
)

// maxStatusRetryWait bounds the wait between two attempts to deliver a
// commit status. The dispatcher's backoff doubles up to minutes, which is
// right for a forge that stays down, but would leave a status undelivered
// for minutes after a short outage ends; an author waiting for the check
// expects it within seconds of the forge coming back, and one attempt per
// source every few seconds costs a forge nothing.
const maxStatusRetryWait = 10 * time.Second

// retryClock is the forge.Dispatcher's clock, capping every wait at limit.
// A wait longer than the limit ends after the limit and moves the clock's
// time forward by the rest, so that the retry it waited for is due. Time
// only moves forward, and the dispatcher uses it only to order retries,
// so skipping ahead just makes every pending retry come sooner.
type retryClock struct {
	limit time.Duration

	mu     sync.Mutex
	offset time.Duration
}

// Now implements forge.Clock.
func (c *retryClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// After implements forge.Clock.
func (c *retryClock) After(d time.Duration) <-chan time.Time {
	if d <= c.limit {
		return time.After(d)
	}
	out := make(chan time.Time, 1)
	time.AfterFunc(c.limit, func() {
		c.mu.Lock()
		c.offset += d - c.limit
		now := time.Now().Add(c.offset)
		c.mu.Unlock()
		out <- now
	})
	return out
}
