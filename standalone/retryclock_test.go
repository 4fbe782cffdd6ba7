package standalone

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetryClockCapsWaits(t *testing.T) {
	c := &retryClock{limit: 20 * time.Millisecond}
	start := c.Now()
	due := start.Add(time.Hour)
	var fired time.Time
	select {
	case fired = <-c.After(time.Hour):
	case <-time.After(10 * time.Second):
		require.FailNow(t, "a one-hour wait was not cut to the limit")
	}
	assert.False(t, c.Now().Before(due), "after the capped wait the awaited time has come")
	assert.False(t, fired.Before(due))

	before := c.Now()
	select {
	case <-c.After(time.Millisecond):
	case <-time.After(10 * time.Second):
		require.FailNow(t, "a short wait never ended")
	}
	assert.Less(t, c.Now().Sub(before), time.Minute, "a short wait does not move the clock")
}
