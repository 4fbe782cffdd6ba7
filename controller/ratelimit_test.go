package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// A configuration that sets no rate gets no client-side limiter (client-go
// would put 5 requests/s in front of every write); one that sets a rate or
// a limiter keeps it, and the caller's configuration is not changed.
func TestUnthrottled(t *testing.T) {
	plain := &rest.Config{Host: "https://127.0.0.1:6443"}
	got := unthrottled(plain)
	assert.Negative(t, got.QPS, "no rate set: client-go's limiter is off")
	assert.Zero(t, plain.QPS, "the caller's configuration is left as it was")
	assert.Equal(t, plain.Host, got.Host)

	set := &rest.Config{QPS: 50, Burst: 100}
	assert.InDelta(t, 50, unthrottled(set).QPS, 0, "a rate the caller set is kept")

	limiter := flowcontrol.NewTokenBucketRateLimiter(1, 1)
	withLimiter := &rest.Config{RateLimiter: limiter}
	assert.Zero(t, unthrottled(withLimiter).QPS, "a limiter the caller set is kept")
	assert.Equal(t, limiter, unthrottled(withLimiter).RateLimiter)
}
