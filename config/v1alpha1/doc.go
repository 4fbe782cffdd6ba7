// Package v1alpha1 contains the legate.dev/v1alpha1 Kubernetes API types.
// The types arrive with the Kubernetes home; until then the package only
// reserves the group and version.
//
// +groupName=legate.dev
package v1alpha1
