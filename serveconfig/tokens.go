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
		if err := privateDir(c.StateDir); err != nil {
			return "", "", err
		}
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := writeNewToken(path); err != nil {
				return "", "", err
			}
		case err != nil:
			return "", "", fmt.Errorf("admin token file %s: %w", path, err)
		default:
			if err := privateToken(path, fi); err != nil {
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

// privateDir refuses a state directory another user could write to:
// whoever can replace what legate keeps there (the admin token it made,
// the store) can act as its admin. A directory that does not exist yet is
// made private.
func privateDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	if owner := otherOwner(fi); owner != "" {
		return fmt.Errorf("state directory %s belongs to another user (%s), who could replace the admin token and the store kept there: use a directory of legate's own user (stateDir, --state-dir)", dir, owner)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("state directory %s is writable by other users (mode %04o), who could replace the admin token and the store kept there: chmod go-w %s, or name a token with --admin-token-file (adminTokenFile)", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// privateToken refuses the admin token legate keeps unless it is what
// legate would have made: a file of its own user that nobody else may
// read. A planted token (or a link to one) would be an admin token its
// planter knows; a readable one, one every user of the machine knows.
func privateToken(path string, fi fs.FileInfo) error {
	remove := "remove it and legate makes a new one, or name a token with --admin-token-file (adminTokenFile)"
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("admin token file %s is not a regular file (%s): %s", path, fi.Mode().Type(), remove)
	case otherOwner(fi) != "":
		return fmt.Errorf("admin token file %s belongs to another user (%s): %s", path, otherOwner(fi), remove)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("admin token file %s may be read or written by other users (mode %04o): chmod 600 it, or %s", path, fi.Mode().Perm(), remove)
	}
	return nil
}
