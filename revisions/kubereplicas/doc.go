// Package kubereplicas lets several replicas of the Kubernetes home share
// one API server: every replica serves xDS, the one holding the Lease
// LeaseName decides (LeaderLock, LeaseHolder).
//
// The leader's writes reach the followers through their cache of the node
// records (kubestore's ConfigMaps): each follower mirrors the record's
// publication into its engine and serves it under the leader's versions.
// The followers' proxies' answers reach the leader through one ConfigMap
// per replica, legate-answers-<hash of the replica>, which each follower
// rewrites when its summary changes (at most every interval given to
// Run, and every answersHeartbeat to say it is alive) and the leader reads
// through its cache; a summary not rewritten for answersStale stops
// counting, since its replica is gone and its proxies reconnect elsewhere.
//
// The package talks to the engine through revisions' exported API only
// (Engine, Records) and to the home through one callback (Counted): it
// imports no home. It lives beside kubestore because it is the engine's
// state over the API server, not the reconcile of a user's object.
package kubereplicas
