// Package webhook holds legate's Kubernetes admission webhooks: Envoy
// sidecar injection into Pods (Injector: legate's and MARIN3R's
// annotations, a native or classic sidecar with a bootstrap per pod over
// mutual TLS, readiness and drain; InjectManifests for legate inject) and
// the admission server (Server) that answers the API server's
// AdmissionReviews, injecting Pods and running the validators of legate's
// own objects that the controller supplies. Every malformed input is
// refused by name, never a panic.
package webhook
