//go:build unix

package serveconfig

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// otherOwner says who owns fi when it is neither legate's user nor root
// (root may own what legate uses: it could change it anyway), "" when
// nobody else does.
func otherOwner(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 || int(st.Uid) == os.Geteuid() {
		return ""
	}
	return fmt.Sprintf("uid %d", st.Uid)
}
