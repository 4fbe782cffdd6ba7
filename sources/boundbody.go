package sources

import "io"

// BoundBody wraps rc so that reading more than limit bytes from it fails
// with over: what an HTTP answer from a server legate does not trust (a
// tenant's registry or Git server) may hold before legate stops reading.
func BoundBody(rc io.ReadCloser, limit int64, over error) io.ReadCloser {
	return &boundBody{ReadCloser: rc, left: limit, over: over}
}

type boundBody struct {
	io.ReadCloser
	left int64
	over error
}

func (b *boundBody) Read(p []byte) (int, error) {
	// One byte past the bound tells an answer over it from one at it.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return 0, b.over
	}
	return n, err
}
