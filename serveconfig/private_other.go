//go:build !unix

package serveconfig

import "io/fs"

// otherOwner is not known beyond Unix; the mode checks still apply.
func otherOwner(fs.FileInfo) string { return "" }
