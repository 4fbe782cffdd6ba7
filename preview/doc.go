// Package preview compares what two renders of a configuration give, node
// by node, for a person deciding whether to merge: the nodes added,
// removed and changed, per resource type the names added, removed and
// changed, a bounded diff of each changed resource in Envoy's field names,
// and how many proxies each changed node reaches now. Key material is never
// shown: SDS secrets appear by name and every field Envoy marks sensitive
// is cleared before a resource is printed.
//
// The package is pure: it renders nothing and publishes nothing. The
// pull-request flow and `legate diff --base --head` render both sides and
// hand the results to Compare.
package preview
