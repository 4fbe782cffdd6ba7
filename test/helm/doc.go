// Package helm tests the Helm chart charts/legate: rendered with Helm's
// own Go library (what helm template and helm install run), its values
// checked by values.schema.json, its CRDs and ClusterRole rules identical
// to the generated ones, and its objects applied server-side to a real API
// server where the controller then works as the chart's service account.
// It is a package of its own so that no other test binary links Helm.
package helm
