// Package analysis judges a rollout step by asking something outside legate:
// an HTTP endpoint the user runs, or a Prometheus query with a success
// condition. It follows Argo Rollouts' analysis semantics (interval, count,
// initialDelay, failureLimit, inconclusiveLimit, consecutiveErrorLimit,
// successCondition/failureCondition) so that a user who wrote an
// AnalysisTemplate reads legate's spec without a manual.
//
// The package knows nothing of the rollout engine: the engine (package
// rollout) calls Runner.Run with a Spec and the Subject under test and gets
// a Result back. Run is bounded in time (count × interval plus each
// measurement's timeout, all validated) and in memory (every answer body,
// message and measurement list has a cap), and it never puts a header
// value, which may be a token, in a Result.
package analysis
