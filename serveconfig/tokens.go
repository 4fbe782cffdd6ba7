package serveconfig

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/legate-dev/legate/readapi"
)

// AdminTokenName is the file under the state directory that holds the
// admin token legate serve made when none was configured.
const AdminTokenName = "admin-token"

// ReadToken returns the token reads must carry, or "" when reads are
// open (no readTokenFile).
func (c Config) ReadToken() (string, error) {
	if c.ReadTokenFile == "" {
		return "", nil
	}
	return readapi.TokenFile("readTokenFile", c.ReadTokenFile)
}

// AdminToken returns the bearer token of mutating calls: the configured
// file's, or the one legate keeps in its state directory, made on the
// first start (random, readable by its owner only).
func (c Config) AdminToken() (token, path string, err error) {
	path = c.AdminTokenFile
	if path == "" {
		path = filepath.Join(c.StateDir, AdminTokenName)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if err := writeNewToken(path); err != nil {
				return "", "", err
			}
		}
	}
	token, err = readapi.TokenFile("admin token file", path)
	return token, path, err
}

func writeNewToken(path string) error {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return fmt.Errorf("make an admin token: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("make an admin token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("make an admin token: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(buf) + "\n"); err != nil {
		_ = f.Close()
		return fmt.Errorf("make an admin token: %w", err)
	}
	return f.Close()
}
